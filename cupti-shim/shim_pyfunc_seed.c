// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Calls already running when tracing began (shim_pyfunc.h): a job's main() when -p attaches,
 * a training loop's function. Their start was never seen, but their end will be (a profile
 * function or a code object's local events see a frame that was running when they went in),
 * so each is recorded from the moment tracing began, flagged BS_PYFUNC_BEGAN_BEFORE.
 *
 * When the poller adds code objects (at install, and later as modules come), it walks every
 * thread's frames (sys._current_frames, GIL held) and keeps each running frame of a new one:
 * its thread (Python's ident, and the kernel's tid from threading's Thread.native_id), where
 * it nests among the thread's named frames, and the time. A thread's stack of open calls is
 * its own (shim_pyfunc.c): the thread takes its kept calls at its next callback, each put
 * where it nests. A call no thread took by the drain (a main() that makes no other named
 * call) is written by the drain, with the tid kept.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "shim_pyfunc.h"

#define MAX_SEEDS  64
#define MAX_FRAMES 512
#define MAX_NAMED  64 /* named frames of one thread looked at */

struct seed {
	unsigned long ident; /* Python's thread ident: pthread_self() */
	uint32_t tid;	     /* 0: not known */
	uint32_t pos;	     /* named frames outer to it on its thread */
	struct open_call call;
	_Atomic bool taken;
};

static struct seed seeds[MAX_SEEDS];
static _Atomic uint32_t nseeds;
static _Atomic uint32_t epoch;

uint32_t shim_pyfunc_seed__count(void)
{
	return atomic_load_explicit(&nseeds, memory_order_acquire);
}

uint32_t shim_pyfunc_seed__epoch(void)
{
	return atomic_load_explicit(&epoch, memory_order_acquire);
}

void shim_pyfunc_seed__clear(void)
{
	atomic_store(&nseeds, 0);
	atomic_fetch_add(&epoch, 1);
}

/* The kernel's tid of the thread Python knows as IDENT (threading's Thread.native_id). */
static uint32_t tid_of(PyObject *ident, long nthreads)
{
	PyObject *mods = py.PySys_GetObject("modules");
	PyObject *threading = mods ? py.PyDict_GetItemString(mods, "threading") : NULL;
	PyObject *active, *thread;
	long tid = 0;

	if (!threading)
		/* Without threading, a job's one running thread is its main thread. */
		return nthreads == 1 ? (uint32_t)getpid() : 0;
	active = shim_pyfunc_attr(threading, "_active");
	thread = active ? py.PyObject_CallMethod(active, "get", "O", ident) : NULL;
	if (thread && thread != py.none)
		tid = shim_pyfunc_attr_long(thread, "native_id");
	if (thread)
		py.Py_DecRef(thread);
	if (active)
		py.Py_DecRef(active);
	py.PyErr_Clear();
	return tid > 0 ? (uint32_t)tid : 0;
}

/* Thread IDENT's frames from FRAME outwards: its running calls of codes from FIRST on. */
static void scan_thread(PyObject *ident, PyObject *frame, uint32_t first, const PyObject *skip,
			uint64_t now, long nthreads)
{
	const struct pyfunc_code *named[MAX_NAMED];
	PyObject *f = frame, *next, *code;
	int n = 0, seen = 0;
	uint32_t tid = 0, outer = 0;
	bool any = false;

	py.Py_IncRef(f);
	while (f && seen++ < MAX_FRAMES && n < MAX_NAMED) {
		const struct pyfunc_code *c;

		code = shim_pyfunc_attr(f, "f_code");
		c = code ? shim_pyfunc_codes__get(code) : NULL;
		if (c) {
			named[n++] = c;
			any |= c->index >= first;
		}
		if (code)
			py.Py_DecRef(code);
		next = shim_pyfunc_attr(f, "f_back");
		py.Py_DecRef(f);
		f = next && next != py.none ? next : NULL;
		if (next == py.none)
			py.Py_DecRef(next);
	}
	if (f)
		py.Py_DecRef(f);
	if (!any)
		return;
	tid = tid_of(ident, nthreads);
	/* innermost first above: the outermost is named[n - 1] */
	for (int i = n - 1; i >= 0; i--, outer++) {
		uint32_t k = atomic_load(&nseeds);
		struct seed *s;

		if (named[i]->index < first || named[i]->code == skip)
			continue;
		if (k == MAX_SEEDS) {
			shim_core__add_dropped(1);
			continue;
		}
		s = &seeds[k];
		s->ident = py.PyLong_AsLong(ident);
		s->tid = tid;
		s->pos = outer;
		s->call = (struct open_call){ named[i]->code, named[i], now, false, true };
		atomic_store(&s->taken, false);
		atomic_store_explicit(&nseeds, k + 1, memory_order_release);
	}
	py.PyErr_Clear();
}

void shim_pyfunc_seed__scan(uint32_t first, const PyObject *skip, uint64_t now)
{
	PyObject *sys_frames = py.PySys_GetObject("_current_frames"), *all, *items;
	long n;

	if (first >= shim_pyfunc_codes__count())
		return;
	if (!sys_frames || !(all = py.PyObject_CallFunction(sys_frames, NULL))) {
		py.PyErr_Clear();
		return;
	}
	items = py.PyDict_Items(all);
	py.Py_DecRef(all);
	n = items ? py.PyObject_Size(items) : 0;
	for (long i = 0; i < n; i++) {
		PyObject *pair = py.PySequence_GetItem(items, i);
		PyObject *ident = pair ? py.PySequence_GetItem(pair, 0) : NULL;
		PyObject *frame = pair ? py.PySequence_GetItem(pair, 1) : NULL;

		if (ident && frame)
			scan_thread(ident, frame, first, skip, now, n);
		if (frame)
			py.Py_DecRef(frame);
		if (ident)
			py.Py_DecRef(ident);
		if (pair)
			py.Py_DecRef(pair);
	}
	if (items)
		py.Py_DecRef(items);
	py.PyErr_Clear();
}

void shim_pyfunc_seed__take(struct open_call *stack, uint32_t *depth, uint32_t max, uint32_t *seen)
{
	uint32_t n = shim_pyfunc_seed__count();
	unsigned long self = (unsigned long)pthread_self();

	for (uint32_t k = *seen; k < n; k++) {
		struct seed *s = &seeds[k];
		uint32_t at = s->pos < *depth ? s->pos : *depth;

		if (s->ident != self || atomic_exchange(&s->taken, true))
			continue;
		/*
		 * Already open in this stack: the session went on past a new install (a second
		 * tracer joined it, or the poller never saw a detach between two recordings), and
		 * the thread has had the call since an earlier one. Taken twice, its end would close
		 * one and leave the other open: two calls in the file.
		 */
		if (at < *depth && stack[at].code == s->call.code)
			continue;
		if (*depth >= max) {
			shim_core__add_dropped(1);
			continue;
		}
		memmove(&stack[at + 1], &stack[at], (*depth - at) * sizeof(*stack));
		stack[at] = s->call;
		(*depth)++;
	}
	*seen = n;
}

bool shim_pyfunc_seed__untaken_for(unsigned long ident)
{
	uint32_t n = shim_pyfunc_seed__count();

	for (uint32_t k = 0; k < n; k++)
		if (seeds[k].ident == ident && !atomic_load(&seeds[k].taken))
			return true;
	return false;
}

void shim_pyfunc_seed__each_untaken(void (*fn)(const struct open_call *o, uint32_t tid,
					       uint32_t depth, void *arg),
				    void *arg)
{
	uint32_t n = shim_pyfunc_seed__count();

	for (uint32_t k = 0; k < n; k++) {
		struct seed *s = &seeds[k];

		if (atomic_load(&s->taken))
			continue;
		if (!s->tid) {
			shim_core__add_dropped(1); /* its thread is not known: said as a loss */
			continue;
		}
		fn(&s->call, s->tid, s->pos, arg);
	}
}
