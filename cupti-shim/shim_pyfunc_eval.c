// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * 3.8-3.11: a frame-evaluation hook (PEP 523), the interpreter's one slot for the function
 * that runs a frame. Every frame evaluation of every thread passes through it: a call, a
 * generator's or coroutine's resume, a throw() into one. It looks the frame's code up in the
 * table (a hash probe) and, unless the code is named, runs the default evaluator at once; a
 * named one's piece begins before and ends after (a NULL result: an exception left it; a
 * generator's frame suspended after it: a yield). Untraced calls pay the probe: 1.00-1.03x a
 * step of small calls on 3.8-3.10, against 1.3-1.9x for the C profile function
 * (bench/RESULTS.md, "Named functions before 3.12"). 3.11 neither inlines a Python-to-Python
 * call nor specializes one while any hook is set (1.36x there, against about 3.6x): so on 3.11
 * the hook leaves the slot once every name is found and each traced function's own calls are
 * recorded instead (shim_pyfunc_swap.c: to_swap below), and comes back (to_hook) where that
 * cannot be exact.
 *
 * Threads need nothing: the slot is the interpreter's, so threads started later and threads
 * running a profiler of their own (cProfile) are traced alike. But a call already running
 * when the hook goes in (-p, a job's main()) has no frame evaluation left to see its end:
 * its thread gets the C profile function (shim_pyfunc_prof.c) until its last such call ends,
 * and the hook leaves the named calls of a thread that has it to it.
 *
 * The slot is taken only when it holds the default evaluator: a job whose slot is another's
 * (TorchDynamo's torch.compile, a debugger) gets the C profile function. One that takes the
 * slot later is seen by the poller, which falls back on the profile function then (the calls
 * in between are missed, and said so). Removal puts the default back only while the slot is
 * still ours; a frame running inside the hook then finishes through it (it records nothing
 * once the recording is off), and the hook stays callable for good (the shim never unloads),
 * for another hook that saved it as its predecessor and calls it; one that puts it back in
 * the slot later has it removed at its first frame. A forked child's first frame starts the
 * child's poller, which removes the parent's hook and installs its own if it is traced.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_pyfunc.h"

typedef PyObject *(*eval38_fn)(void *frame, int throwflag);
typedef PyObject *(*eval_fn)(void *tstate, void *frame, int throwflag);

/* The frame's code object: PyFrameObject.f_code on 3.8-3.10, _PyInterpreterFrame.f_code on
 * 3.11, both at 32 (shim_pyfunc_api.c's layouts; checked at install). */
#define FRAME_F_CODE 32

static void *interp;
static void *default_eval; /* _PyEval_EvalFrameDefault */
static bool installed;
static bool scanning;	       /* entries are looked for at first calls */
static _Atomic bool keeping;   /* some thread has the profile function for its seeds */
static _Atomic bool fell_back; /* the slot was taken: the profile function instead */
static bool forked;	       /* a forked child's first frame is yet to come */
/* 3.11: each function's own calls instead (shim_pyfunc_swap.c), the slot left default */
static bool swap_pending; /* not yet: a code object has no function object yet */
static char *desc_out;	  /* the poller's description of the mechanism (st.desc) */
static size_t desc_cap;

static PyObject *run(void *tstate, void *frame, int throwflag)
{
	if (py.minor == 8)
		return ((eval38_fn)default_eval)(frame, throwflag);
	return ((eval_fn)default_eval)(tstate, frame, throwflag);
}

/* The thread has the profile function (kept for a seed, or the fallback): it records. */
static bool profiled(void *tstate);

bool shim_pyfunc_eval__profiled(void)
{
	return profiled(NULL);
}

static bool profiled(void *tstate)
{
	if (!atomic_load_explicit(&keeping, memory_order_relaxed) &&
	    !atomic_load_explicit(&fell_back, memory_order_relaxed))
		return false;
	if (!tstate)
		tstate = py.PyThreadState_Get(); /* 3.8 passes none */
	return shim_pyfunc_api__profile_of(tstate) == shim_pyfunc_prof__fn();
}

static void *ours(void);
static void *slot(void);
static void set_slot(void *fn);

/* A frame whose code is named, or that may be (looked for), or no recording: the slow way. */
static __attribute__((noinline)) PyObject *evaluate(void *tstate, void *frame, int throwflag)
{
	PyObject *code = *(PyObject **)((char *)frame + FRAME_F_CODE), *res;
	const struct pyfunc_code *c = shim_pyfunc_codes__get(code);
	enum pyfunc_eval_at at;
	bool candidate;

	/*
	 * A forked child's first frame (a DataLoader worker's): the shim's poller is started
	 * again (shim_pyfunc__on, off until then), which removes the parent's hook and installs
	 * the child's own when the recording follows it, as the profile function's first event
	 * in a child did.
	 */
	if (forked) {
		forked = false;
		shim_pyfunc__on();
	}
	/*
	 * No recording, yet called: another hook that saved ours calls it, or put it back in
	 * the slot (TorchDynamo leaving a compiled region). The default goes back in its place.
	 */
	if (!installed) {
		if (slot() == ours())
			set_slot(default_eval);
		return run(tstate, frame, throwflag);
	}
	if (!c && scanning) {
		/*
		 * A throw() into a generator (throwflag) comes with its exception set: the
		 * discovery may run Python code and clears what it raises, so the exception is
		 * put aside around it (as CPython does around a profile function).
		 */
		PyObject *type, *value, *tb;

		py.PyErr_Fetch(&type, &value, &tb);
		c = shim_pyfunc__discover(code, shim_pyfunc_api__code_name(code), &candidate);
		py.PyErr_Restore(type, value, tb);
	}
	/* Each function's own calls recorded: a hook that saved ours still calls it. */
	if (!c || shim_pyfunc_swap__active() || !shim_pyfunc__on() || profiled(tstate))
		return run(tstate, frame, throwflag);
	at = shim_pyfunc_api__eval_at(frame, c->gen);
	if (at == PYFUNC_EVAL_CREATE)
		return run(tstate, frame, throwflag);
	shim_pyfunc__begin(c, at == PYFUNC_EVAL_RESUME);
	res = run(tstate, frame, throwflag);
	shim_pyfunc__end(c, !res ? BS_PYFUNC_END_UNWIND
			    : c->gen && shim_pyfunc_api__eval_yielded(frame)
				    ? BS_PYFUNC_END_YIELD
				    : BS_PYFUNC_END_RETURN);
	return res;
}

/* Whether a frame can go straight to the default evaluator: the hook's every call. */
static inline bool untraced(void *frame)
{
	return installed && !scanning && !forked &&
	       !shim_pyfunc_codes__get(*(PyObject **)((char *)frame + FRAME_F_CODE));
}

static PyObject *hook38(void *frame, int throwflag)
{
	if (untraced(frame))
		return ((eval38_fn)default_eval)(frame, throwflag);
	return evaluate(NULL, frame, throwflag);
}

static PyObject *hook(void *tstate, void *frame, int throwflag)
{
	if (untraced(frame))
		return ((eval_fn)default_eval)(tstate, frame, throwflag);
	return evaluate(tstate, frame, throwflag);
}

static void *ours(void)
{
	return py.minor == 8 ? (void *)hook38 : (void *)hook;
}

static void *slot(void)
{
	if (py.minor == 8)
		return *shim_pyfunc_api__eval_slot_38(interp);
	return py.GetEvalFrameFunc(interp);
}

static void set_slot(void *fn)
{
	if (py.minor == 8)
		*shim_pyfunc_api__eval_slot_38(interp) = fn;
	else
		py.SetEvalFrameFunc(interp, fn);
}

/* Whether this interpreter has what the hook needs. */
static bool usable(void)
{
	if (py.minor > 11 || !py._PyEval_EvalFrameDefault || !py.PyThreadState_Get)
		return false;
	return py.minor == 8 ? true : py.GetEvalFrameFunc && py.SetEvalFrameFunc;
}

static int eval_install(char *why, size_t len, char *desc, size_t dlen)
{
	void *cur;

	interp = py.PyInterpreterState_Main();
	default_eval = py._PyEval_EvalFrameDefault;
	if (!usable() || shim_pyfunc_api__eval_code_offset() != FRAME_F_CODE) {
		snprintf(why, len, "no frame-evaluation hook in this interpreter");
		return -ENOSYS;
	}
	cur = slot();
	if (cur && cur != py._PyEval_EvalFrameDefault && cur != ours()) {
		snprintf(why, len, "the frame-evaluation hook is another's (%p)", cur);
		return -EBUSY;
	}
	installed = true;
	scanning = false;
	swap_pending = false;
	atomic_store(&fell_back, false);
	set_slot(ours());
	desc_out = desc;
	desc_cap = dlen;
	snprintf(desc, dlen, "a frame-evaluation hook (PEP 523)");
	return 0;
}

/* The slot holds the default evaluator (3.11 keeps NULL for it). */
static bool slot_default(void)
{
	void *cur = slot();

	return !cur || cur == default_eval;
}

static void say_hook(const char *why)
{
	snprintf(desc_out, desc_cap, "a frame-evaluation hook (PEP 523)%s%s%s",
		 why ? " (not each function's own calls: " : "", why ? why : "", why ? ")" : "");
}

/*
 * 3.11, every entry found: each traced function's own calls recorded (shim_pyfunc_swap.c)
 * and the hook out of the slot, so the job's other calls run inlined again. Where that
 * cannot be exact, the hook stays, and says why.
 */
static void to_swap(void)
{
	char why[200];

	if (py.minor != 11 || scanning || atomic_load(&fell_back))
		return;
	if (!shim_pyfunc_swap__active() && !shim_pyfunc_swap__enter(why, sizeof(why))) {
		swap_pending = strstr(why, "no function object yet") != NULL;
		say_hook(why);
		return;
	}
	swap_pending = false;
	if (slot() == ours())
		set_slot(default_eval);
	snprintf(desc_out, desc_cap,
		 "each function's own calls (%u function objects given a function type of the "
		 "shim's; no frame-evaluation hook)",
		 shim_pyfunc_swap__count());
}

/* Back to the hook for every call (GIL held): WHY said. */
static void to_hook(const char *why)
{
	char pwhy[160];

	if (!shim_pyfunc_swap__active())
		return;
	shim_pyfunc_swap__leave();
	if (slot_default()) {
		set_slot(ours());
		say_hook(why);
		return;
	}
	/* The slot became another's meanwhile (torch.compile): the profile function. */
	atomic_store(&fell_back, true);
	if (shim_pyfunc_prof.install(pwhy, sizeof(pwhy), desc_out, desc_cap))
		snprintf(desc_out, desc_cap, "each function's own calls, then nothing: %s", pwhy);
	else
		snprintf(desc_out, desc_cap,
			 "each function's own calls until %s, then a C profile function (the "
			 "frame-evaluation hook is another's (%p))",
			 why, slot());
}

static void eval_scan(bool on)
{
	scanning = on;
	if (atomic_load(&fell_back))
		shim_pyfunc_prof.scan(on);
	if (on)
		to_hook("a name is still looked for at first calls");
	else
		to_swap();
}

static void eval_add(const struct pyfunc_code *c, bool may_have_run)
{
	char name[256], why[400];

	(void)may_have_run;
	if (!shim_pyfunc_swap__active() ||
	    shim_pyfunc_swap__added(c, shim_pyfunc_resolve__adding_fn()))
		return;
	/* Its function objects are walked at the next resolve, soon: the hook meanwhile. */
	snprintf(why, sizeof(why), "%s found since, its function objects not yet known",
		 shim_pyfunc_attr_str(c->code, "co_qualname", name, sizeof(name)));
	to_hook(why);
	swap_pending = true;
}

static bool eval_pending(void)
{
	return swap_pending;
}

static bool eval_stale(void)
{
	return shim_pyfunc_swap__active() && shim_pyfunc_swap__stale();
}

static bool eval_look(char *late, size_t llen)
{
	char why[200];

	late[0] = 0;
	if (!shim_pyfunc_swap__active())
		return false;
	if (shim_pyfunc_swap__look_again(why, sizeof(why), late, llen))
		return false;
	to_hook(why);
	return true;
}

static void eval_refresh(void)
{
	if (atomic_load(&fell_back))
		shim_pyfunc_prof.refresh();
}

/* Calls found running: their threads get the profile function to see them end. */
static void eval_seeded(void)
{
	for (void *ts = py.PyInterpreterState_ThreadHead(interp); ts;
	     ts = py.PyThreadState_Next(ts)) {
		if (!shim_pyfunc_seed__untaken_for(shim_pyfunc_api__thread_id(ts)))
			continue;
		atomic_store(&keeping, true);
		shim_pyfunc_prof__keep(ts);
	}
}

static bool eval_lost(void)
{
	return installed && !atomic_load(&fell_back) && !shim_pyfunc_swap__active() &&
	       slot() != ours();
}

static void eval_recover(char *desc, size_t dlen)
{
	char why[160];
	void *other = slot();

	/* The profile function on every thread: the hook, if still called, leaves them to it. */
	atomic_store(&fell_back, true);
	if (shim_pyfunc_prof.install(why, sizeof(why), desc, dlen)) {
		snprintf(desc, dlen, "a frame-evaluation hook, then nothing: %s", why);
		return;
	}
	snprintf(desc, dlen,
		 "a frame-evaluation hook until another took its place (%p), then a C profile "
		 "function: calls in between were missed",
		 other);
}

void shim_pyfunc_eval__forked(void)
{
	forked = installed;
	/*
	 * Each function's own calls: the hook goes back in the child's copy of the slot (a plain
	 * store on 3.11), so its first frame starts the child's poller, which puts the
	 * functions back and installs the child's own.
	 */
	if (forked && shim_pyfunc_swap__active()) {
		shim_pyfunc_swap__leave();
		set_slot(ours());
	}
}

static void eval_remove(void)
{
	if (interp && slot() == ours())
		set_slot(py._PyEval_EvalFrameDefault);
	shim_pyfunc_swap__restore();
	swap_pending = false;
	installed = false;
	scanning = false;
	if (atomic_exchange(&fell_back, false))
		shim_pyfunc_prof.remove();
	shim_pyfunc_prof__unkeep_all();
	atomic_store(&keeping, false);
}

const struct pyfunc_mech shim_pyfunc_eval = {
	.name = "frame-evaluation hook",
	.install = eval_install,
	.add = eval_add,
	.refresh = eval_refresh,
	.pending = eval_pending,
	.stale = eval_stale,
	.look = eval_look,
	.scan = eval_scan,
	.seeded = eval_seeded,
	.lost = eval_lost,
	.recover = eval_recover,
	.remove = eval_remove,
};
