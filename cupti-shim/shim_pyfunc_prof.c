// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 3.8-3.11: a C profile function (Py_tracefunc), the only hook those versions have. It runs
 * at every Python call and return of a thread, and at every builtin call: those return at
 * once, a Python one looks its code up in the table (a hash probe) and returns unless named.
 * That is the cost of untraced code while recording (bench/RESULTS.md, docs/USAGE.md).
 *
 * Installed on every thread state of the main interpreter (_PyEval_SetProfile, or 3.8's
 * fields), except a thread that runs another profiler (cProfile, a sys.setprofile hook):
 * it is left alone and said. Threads started later: threading.setprofile(starter), a builtin
 * function that Python's threading makes each new thread's profile hook; its first event
 * puts the C function in its place (and removes itself if the recording ended meanwhile).
 *
 * Finding functions at their first call: while an entry is not found, a call of a code object
 * that is not traced reads its co_name (interned: compared by address) and, when it is a
 * missing entry's last part, hands it to the discovery (shim_pyfunc__discover), which traces
 * it from that very call when it is the entry's; that costs untraced calls one load and a
 * probe while an entry is missing, nothing once all are found. The same look watches for
 * threading's Thread.start (by its name, "start") until threading's hook is in: installed as
 * the interpreter starts (launch mode), the hook must be in before the job's first thread
 * starts, not at the poller's next look.
 *
 * Also kept on the threads of calls already running when the frame-evaluation hook goes in
 * (shim_pyfunc_eval.c), which no frame evaluation will see end: each thread drops it at the
 * end of its last such call.
 *
 * The events: PyTrace_CALL begins a piece (a generator's resume is one too: its frame has
 * run before); PyTrace_RETURN ends it, with arg NULL when an exception leaves the frame, and
 * a generator's frame suspended when it yields (shim_pyfunc_api.c reads which by version).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_pyfunc.h"

#define PYTRACE_CALL   0
#define PYTRACE_RETURN 3

static bool installed;	    /* the mechanism of the recording */
static bool keeping;	    /* kept on a few threads for the eval hook (shim_pyfunc_eval.c) */
static bool scanning;	    /* entries are looked for at first calls */
static PyObject *start;	    /* "start", interned: threading.Thread.start's co_name */
static PyObject *starter;   /* threading's hook for new threads */
static PyObject *threading; /* the module, when the job imported it */
static uint32_t skipped;    /* threads left to their own profiler */

static void threading_hook(PyObject *hook);

/* A call of CODE, which is not traced: a missing entry's at its first call? Thread.start? */
static const struct pyfunc_code *untraced_call(PyObject *code)
{
	PyObject *name = shim_pyfunc_api__code_name(code);
	bool candidate;

	if (name == start && !threading) /* the job's first thread starts: the hook first */
		threading_hook(starter);
	return scanning ? shim_pyfunc__discover(code, name, &candidate) : NULL;
}

static int profile(PyObject *obj, void *frame, int what, PyObject *arg)
{
	const struct pyfunc_code *c;
	PyObject *code;

	(void)obj;
	if (what != PYTRACE_CALL && what != PYTRACE_RETURN)
		return 0;
	code = shim_pyfunc_api__frame_code(frame);
	c = shim_pyfunc_codes__get(code);
	if (!c && what == PYTRACE_CALL && installed && (scanning || !threading))
		c = untraced_call(code);
	if (!c || !shim_pyfunc__on())
		return 0;
	if (what == PYTRACE_CALL) {
		shim_pyfunc__begin(c, c->gen && shim_pyfunc_api__frame_resumed(frame));
		return 0;
	}
	shim_pyfunc__end(c, !arg ? BS_PYFUNC_END_UNWIND
			    : c->gen && shim_pyfunc_api__frame_yielded(frame)
				    ? BS_PYFUNC_END_YIELD
				    : BS_PYFUNC_END_RETURN);
	/* Kept for a call begun before tracing: once none is open, the eval hook sees all. */
	if (keeping && !installed && !shim_pyfunc__kept_open())
		py.PyEval_SetProfile(NULL, NULL);
	return 0;
}

/* A new thread's first profile event: the C function from now on (or nothing, if over). */
static PyObject *start_thread(PyObject *self, PyObject *const *args, long nargs)
{
	(void)self;
	(void)args;
	(void)nargs;
	py.PyEval_SetProfile(installed ? (void *)profile : NULL, NULL);
	py.Py_IncRef(py.none);
	return py.none;
}

static struct py_method_def starter_def = { "bpfsight_profile_starter", (void *)start_thread,
					    METH_FASTCALL, NULL };

/* Every thread state: FN(tstate). */
static void for_each_thread(void (*fn)(void *tstate))
{
	void *interp = py.PyInterpreterState_Main();

	for (void *ts = py.PyInterpreterState_ThreadHead(interp); ts;
	     ts = py.PyThreadState_Next(ts))
		fn(ts);
}

static void set_one(void *ts)
{
	void *cur = shim_pyfunc_api__profile_of(ts);

	if (cur && cur != (void *)profile) {
		skipped++;
		return;
	}
	if (shim_pyfunc_api__set_profile(ts, (void *)profile))
		py.PyErr_Clear();
}

static void clear_one(void *ts)
{
	if (shim_pyfunc_api__profile_of(ts) == (void *)profile &&
	    shim_pyfunc_api__set_profile(ts, NULL))
		py.PyErr_Clear();
}

/* threading.setprofile(HOOK) when the job has threading (imported by it, never by us). */
static void threading_hook(PyObject *hook)
{
	PyObject *mods = py.PySys_GetObject("modules");
	PyObject *mod = mods ? py.PyDict_GetItemString(mods, "threading") : NULL;
	PyObject *ret;

	if (!mod)
		return;
	ret = py.PyObject_CallMethod(mod, "setprofile", "O", hook);
	py.PyErr_Clear();
	/* A module still being imported has no setprofile yet: the next refresh tries again. */
	if (!ret)
		return;
	py.Py_DecRef(ret);
	if (hook != py.none && !threading) {
		threading = mod;
		py.Py_IncRef(threading);
	}
}

static int prof_install(char *why, size_t len, char *desc, size_t dlen)
{
	starter = py.PyCFunction_NewEx(&starter_def, NULL, NULL);
	if (!starter) {
		py.PyErr_Clear();
		snprintf(why, len, "Python functions not traced: no function object for threads");
		return -ENOMEM;
	}
	installed = true;
	scanning = false;
	skipped = 0;
	if (!start)
		start = py.PyUnicode_InternFromString("start"); /* kept: interned for good */
	py.PyErr_Clear();
	for_each_thread(set_one);
	threading_hook(starter);
	snprintf(desc, dlen, "a C profile function%s",
		 skipped ? " (threads with a profiler of "
			   "their own left alone)"
			 : "");
	return 0;
}

static void prof_scan(bool on)
{
	scanning = on;
}

/* The job imported threading since: its new threads get the starter too. */
static void prof_refresh(void)
{
	if (!threading)
		threading_hook(starter);
}

static void prof_remove(void)
{
	installed = false;
	scanning = false;
	for_each_thread(clear_one);
	if (threading) {
		PyObject *ret = py.PyObject_CallMethod(threading, "setprofile", "O", py.none);

		if (ret)
			py.Py_DecRef(ret);
		py.PyErr_Clear();
		py.Py_DecRef(threading);
		threading = NULL;
	}
	if (starter)
		py.Py_DecRef(starter);
	starter = NULL;
}

void *shim_pyfunc_prof__fn(void)
{
	return (void *)profile;
}

void shim_pyfunc_prof__keep(void *tstate)
{
	if (shim_pyfunc_api__profile_of(tstate))
		return; /* ours already, or a profiler of the job's: left alone */
	keeping = true;
	if (shim_pyfunc_api__set_profile(tstate, (void *)profile))
		py.PyErr_Clear();
}

void shim_pyfunc_prof__unkeep_all(void)
{
	if (keeping)
		for_each_thread(clear_one);
	keeping = false;
}

const struct pyfunc_mech shim_pyfunc_prof = {
	.name = "profile function",
	.install = prof_install,
	.refresh = prof_refresh,
	.scan = prof_scan,
	.remove = prof_remove,
};
