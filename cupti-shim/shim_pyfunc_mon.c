// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 3.12+: sys.monitoring (PEP 669). A tool id of its own (the first free of 4, 3, 5, 2, 1, 0:
 * 4 and 3 have no assigned user, 2 is cProfile's, 1 coverage's, 0 debuggers'), C callbacks
 * (builtin functions with vectorcall) for PY_START, PY_RESUME, PY_RETURN, PY_YIELD as LOCAL
 * events on the named code objects only: code outside them is not instrumented and pays
 * nothing. PY_UNWIND and PY_THROW can only be global events: their callbacks run for every
 * function an exception leaves and every throw() into a generator, and look the code up in
 * the table (a hash probe) before anything else.
 * Removing: the local events of every code object cleared, the global one too, each callback
 * unregistered, the tool id freed (3.12's free_tool_id clears nothing itself).
 *
 * Finding functions at their first call: while an entry is not found, PY_START is a global
 * event too. Its callback hands a code object that is not traced to the discovery
 * (shim_pyfunc__discover): one whose name is a missing entry's last part is resolved at once
 * and traced from that very call when it is the entry's; any other gets DISABLE back, which
 * turns the event off for that code object alone, so untraced code pays once, not per call.
 * A disabled location stays so even when local events are added later (CPython's DISABLE is
 * per code location and tool, and a local event already active globally is not "new"), so a
 * code object the poller's walk finds later whose name is none of the missing entries' (an
 * alias, a lambda) may have been disabled: sys.monitoring.restart_events() re-enables it then
 * (and every tool's disabled events, which each tool's callback disables again).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_pyfunc.h"

enum { EV_START, EV_RESUME, EV_THROW, EV_RETURN, EV_YIELD, EV_UNWIND, EV_N };

static const char *const ev_names[EV_N] = { "PY_START",	 "PY_RESUME", "PY_THROW",
					    "PY_RETURN", "PY_YIELD",  "PY_UNWIND" };
static const int tool_order[] = { 4, 3, 5, 2, 1, 0 };

static long ev_bits[EV_N];
static long local_mask;
static int tool = -1;
static PyObject *monitoring;
static PyObject *disable; /* sys.monitoring.DISABLE */
static PyObject *callbacks[EV_N];
static bool scanning;	  /* PY_START is a global event too */
static bool disabled_any; /* a callback returned DISABLE since the last restart */
static bool need_restart; /* a code object that may have been disabled is traced now */

static PyObject *none(void)
{
	py.Py_IncRef(py.none);
	return py.none;
}

/* args[0] is the code object of every event's callback. */
static const struct pyfunc_code *named(PyObject *const *args, long nargs)
{
	return nargs >= 1 && shim_pyfunc__on() ? shim_pyfunc_codes__get(args[0]) : NULL;
}

#define CALLBACK(fn, body)                                                                         \
	static PyObject *fn(PyObject *self, PyObject *const *args, long nargs)                     \
	{                                                                                          \
		const struct pyfunc_code *c = named(args, nargs);                                  \
                                                                                                   \
		(void)self;                                                                        \
		if (c)                                                                             \
			body;                                                                      \
		return none();                                                                     \
	}

/* PY_START: a named code's call begins; while scanning, any other's is tried first. */
static PyObject *on_start(PyObject *self, PyObject *const *args, long nargs)
{
	const struct pyfunc_code *c = nargs >= 1 ? shim_pyfunc_codes__get(args[0]) : NULL;
	bool candidate = true;
	PyObject *name;

	(void)self;
	if (!c && scanning && nargs >= 1) {
		name = py.PyObject_GetAttrString(args[0], "co_name");
		py.PyErr_Clear();
		c = shim_pyfunc__discover(args[0], name, &candidate);
		if (name)
			py.Py_DecRef(name);
		if (!c && !candidate && disable) {
			disabled_any = true;
			py.Py_IncRef(disable);
			return disable;
		}
	}
	if (c && shim_pyfunc__on())
		shim_pyfunc__begin(c, false);
	return none();
}

CALLBACK(on_resume, shim_pyfunc__begin(c, true))
CALLBACK(on_return, shim_pyfunc__end(c, BS_PYFUNC_END_RETURN))
CALLBACK(on_yield, shim_pyfunc__end(c, BS_PYFUNC_END_YIELD))
CALLBACK(on_unwind, shim_pyfunc__end(c, BS_PYFUNC_END_UNWIND))

static struct py_method_def defs[EV_N] = {
	[EV_START] = { "bpfsight_py_start", (void *)on_start, METH_FASTCALL, NULL },
	[EV_RESUME] = { "bpfsight_py_resume", (void *)on_resume, METH_FASTCALL, NULL },
	/* a throw() into a suspended generator resumes it */
	[EV_THROW] = { "bpfsight_py_throw", (void *)on_resume, METH_FASTCALL, NULL },
	[EV_RETURN] = { "bpfsight_py_return", (void *)on_return, METH_FASTCALL, NULL },
	[EV_YIELD] = { "bpfsight_py_yield", (void *)on_yield, METH_FASTCALL, NULL },
	[EV_UNWIND] = { "bpfsight_py_unwind", (void *)on_unwind, METH_FASTCALL, NULL },
};

/* The result of a call into sys.monitoring: 0, or -1 with the error cleared. */
static int call_obj(PyObject *ret)
{
	if (!ret) {
		py.PyErr_Clear();
		return -1;
	}
	py.Py_DecRef(ret);
	return 0;
}

static void remove_code(const struct pyfunc_code *c, void *arg)
{
	(void)arg;
	call_obj(py.PyObject_CallMethod(monitoring, "set_local_events", "iOi", tool, c->code, 0));
}

static void mon_remove(void)
{
	if (tool < 0)
		return;
	scanning = disabled_any = need_restart = false;
	if (disable)
		py.Py_DecRef(disable);
	disable = NULL;
	shim_pyfunc_codes__for_each(remove_code, NULL);
	call_obj(py.PyObject_CallMethod(monitoring, "set_events", "ii", tool, 0));
	for (int e = 0; e < EV_N; e++) {
		call_obj(py.PyObject_CallMethod(monitoring, "register_callback", "ilO", tool,
						ev_bits[e], py.none));
		if (callbacks[e])
			py.Py_DecRef(callbacks[e]);
		callbacks[e] = NULL;
	}
	call_obj(py.PyObject_CallMethod(monitoring, "free_tool_id", "i", tool));
	py.Py_DecRef(monitoring);
	monitoring = NULL;
	tool = -1;
}

static void mon_add(const struct pyfunc_code *c, bool may_have_run)
{
	PyObject *name;

	call_obj(py.PyObject_CallMethod(monitoring, "set_local_events", "iOl", tool, c->code,
					local_mask));
	if (!may_have_run || !disabled_any || need_restart)
		return;
	/* A missing entry's name never got DISABLE (it is tried at each call): others may have. */
	name = py.PyObject_GetAttrString(c->code, "co_name");
	py.PyErr_Clear();
	if (!name || !shim_pyfunc_resolve__candidate(name))
		need_restart = true;
	if (name)
		py.Py_DecRef(name);
}

/* The global events: PY_START too while entries are looked for at first calls. */
static void mon_scan(bool on)
{
	long global = ev_bits[EV_UNWIND] | ev_bits[EV_THROW] | (on ? ev_bits[EV_START] : 0);

	if (on != scanning &&
	    !call_obj(py.PyObject_CallMethod(monitoring, "set_events", "il", tool, global)))
		scanning = on;
	if (need_restart) {
		call_obj(py.PyObject_CallMethod(monitoring, "restart_events", NULL));
		need_restart = disabled_any = false;
	}
}

/* A free tool id, taken: its number, or -1. */
static int take_tool(void)
{
	for (size_t i = 0; i < sizeof(tool_order) / sizeof(tool_order[0]); i++) {
		PyObject *who = py.PyObject_CallMethod(monitoring, "get_tool", "i", tool_order[i]);
		bool free_id = who == py.none;

		if (!who) {
			py.PyErr_Clear();
			continue;
		}
		py.Py_DecRef(who);
		if (free_id && !call_obj(py.PyObject_CallMethod(monitoring, "use_tool_id", "is",
								tool_order[i], "bpfsight")))
			return tool_order[i];
	}
	return -1;
}

static int mon_install(char *why, size_t len, char *desc, size_t dlen)
{
	PyObject *events;

	monitoring = py.PySys_GetObject("monitoring");
	if (!monitoring || !(events = py.PyObject_GetAttrString(monitoring, "events"))) {
		py.PyErr_Clear();
		snprintf(why, len, "Python functions not traced: Python 3.%d has no sys.monitoring",
			 py.minor);
		monitoring = NULL;
		return -ENOSYS;
	}
	py.Py_IncRef(monitoring);
	disable = py.PyObject_GetAttrString(monitoring, "DISABLE");
	py.PyErr_Clear();
	scanning = disabled_any = need_restart = false;
	local_mask = 0;
	for (int e = 0; e < EV_N; e++) {
		PyObject *v = py.PyObject_GetAttrString(events, ev_names[e]);

		ev_bits[e] = v ? py.PyLong_AsLong(v) : 0;
		if (v)
			py.Py_DecRef(v);
		if (e != EV_UNWIND && e != EV_THROW)
			local_mask |= ev_bits[e];
	}
	py.Py_DecRef(events);
	py.PyErr_Clear();
	tool = take_tool();
	if (tool < 0) {
		snprintf(why, len,
			 "Python functions not traced: every sys.monitoring tool id is in use");
		py.Py_DecRef(monitoring);
		monitoring = NULL;
		return -EBUSY;
	}
	for (int e = 0; e < EV_N; e++) {
		callbacks[e] = py.PyCFunction_NewEx(&defs[e], NULL, NULL);
		if (!callbacks[e] ||
		    call_obj(py.PyObject_CallMethod(monitoring, "register_callback", "ilO", tool,
						    ev_bits[e], callbacks[e]))) {
			py.PyErr_Clear();
			mon_remove();
			snprintf(why, len,
				 "Python functions not traced: sys.monitoring refused "
				 "the callbacks");
			return -EINVAL;
		}
	}
	if (call_obj(py.PyObject_CallMethod(monitoring, "set_events", "il", tool,
					    ev_bits[EV_UNWIND] | ev_bits[EV_THROW]))) {
		mon_remove();
		snprintf(why, len, "Python functions not traced: sys.monitoring.set_events failed");
		return -EINVAL;
	}
	snprintf(desc, dlen, "sys.monitoring tool id %d", tool);
	return 0;
}

const struct pyfunc_mech shim_pyfunc_mon = {
	.name = "sys.monitoring",
	.install = mon_install,
	.add = mon_add,
	.scan = mon_scan,
	.remove = mon_remove,
};
