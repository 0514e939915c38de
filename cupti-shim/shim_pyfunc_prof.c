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

static bool installed;
static PyObject *starter;   /* threading's hook for new threads */
static PyObject *threading; /* the module, when the job imported it */
static uint32_t skipped;    /* threads left to their own profiler */

static int profile(PyObject *obj, void *frame, int what, PyObject *arg)
{
	const struct pyfunc_code *c;

	(void)obj;
	if (what != PYTRACE_CALL && what != PYTRACE_RETURN)
		return 0;
	c = shim_pyfunc_codes__get(shim_pyfunc_api__frame_code(frame));
	if (!c || !shim_pyfunc__on())
		return 0;
	if (what == PYTRACE_CALL)
		shim_pyfunc__begin(c, c->gen && shim_pyfunc_api__frame_resumed(frame));
	else
		shim_pyfunc__end(c, !arg ? BS_PYFUNC_END_UNWIND
				    : c->gen && shim_pyfunc_api__frame_yielded(frame)
					    ? BS_PYFUNC_END_YIELD
					    : BS_PYFUNC_END_RETURN);
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
	skipped = 0;
	for_each_thread(set_one);
	threading_hook(starter);
	snprintf(desc, dlen, "a C profile function%s",
		 skipped ? " (threads with a profiler of "
			   "their own left alone)"
			 : "");
	return 0;
}

/* A code object newly traced: the profile function knows it from the table. */
static void prof_add(const struct pyfunc_code *c)
{
	(void)c;
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

const struct pyfunc_mech shim_pyfunc_prof = {
	.name = "profile function",
	.install = prof_install,
	.add = prof_add,
	.refresh = prof_refresh,
	.remove = prof_remove,
};
