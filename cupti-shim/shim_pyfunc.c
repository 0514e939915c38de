// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The pyfunc module (shim_pyfunc.h): the named Python functions' calls, while a tracer wants
 * them (the bpfsight:pyfunc semaphore) and has written what to trace into the exported spec
 * buffer (struct bs_pyfunc_spec, bpf/pyfunc_records.h).
 *
 * The poller, every 50 ms, with the GIL taken only when something changes:
 *   - semaphore up and a spec (gen != 0) it has not installed: the code objects resolved
 *     (shim_pyfunc_resolve.c) and the mechanism installed (3.12+: sys.monitoring; before: a
 *     frame-evaluation hook, or the C profile function where the interpreter's slot for it is
 *     another's), STATUS(PYFUNC) saying which and what was not found; a hook whose slot is
 *     taken later falls back on the profile function, said again;
 *   - while up: resolved again when sys.modules grew, and every second while an entry is
 *     still missing or has flag 's' (a function imported or defined later); a class created
 *     meanwhile is checked as it is created (builtins.__build_class__ wrapped, below);
 *   - semaphore down (the recording ended, or the recorder was SIGKILLed: the kernel drops
 *     its semaphores), or a forked child's inherited copy: everything removed, GIL held,
 *     and the spec's gen put back to 0 (compare-and-swap: a new recorder's write wins), so
 *     the next recording waits for its own spec rather than reinstall the last one.
 *
 * The callbacks (any thread, GIL held) keep each thread's open named calls on a stack in its
 * shim_thread (the clock is torch's: shim_clock.h) and write a BS_REC_PYFUNC_CALL into the
 * thread's batch when one ends.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyfunc_records.h"
#include "shim.h"
#include "shim_clock.h"
#include "shim_pyfunc.h"
#include "shim_usdt.h"

extern const struct shim_module shim_pyfunc_module;

/* The pyfunc family's control site: bpfsight:pyfunc. */
SHIM_SEMAPHORE(pyfunc);

/* Written by the recorder (process_vm_writev): text first, gen last; magic, never. */
SHIM_EXPORT struct bs_pyfunc_spec bpfsight_pyfunc_spec = { .magic = BS_PYFUNC_SPEC_MAGIC };

#define SHIM_HOT_PYFUNC	 0x10 /* the callbacks record (shim.h: the next free bit after torch) */
#define PYFUNC_MAX_DEPTH 128
#define RETRY_NS	 (1000 * SHIM_NS_PER_MS)

struct pyfunc_thread {
	struct shim_thread *thread;
	uint32_t session;
	uint32_t depth; /* may exceed PYFUNC_MAX_DEPTH: those above it are not kept */
	uint32_t seeds_seen, seeds_epoch; /* calls begun before tracing: shim_pyfunc_seed.c */
	struct open_call stack[PYFUNC_MAX_DEPTH];
};

static int module_slot;
static __thread struct pyfunc_thread *me;

/* The poller's state. */
static struct {
	const struct pyfunc_mech *mech; /* installed, NULL: nothing is */
	pid_t pid;			/* the process that installed it (a fork's copy is not) */
	uint32_t gen;			/* the spec installed */
	uint32_t refused_gen;		/* a spec whose install failed: not tried again */
	char *text;			/* its copy */
	PyObject *modules_dict;		/* sys.modules (a reference) */
	long modules;			/* len(sys.modules) at the last resolve */
	int missing;			/* entries not found at the last resolve */
	bool subclasses;		/* an entry has flag 's': a class defined later may add */
	uint64_t last_resolve;
	uint32_t noted_codes;  /* the code objects the last note counted */
	_Atomic bool found;    /* a callback found an entry at its first call: note it */
	bool discovering;      /* a callback is trying a code object (not re-entered) */
	PyObject *atexit_hook; /* registered with atexit while an entry is missing */
	char desc[256];
	char desc_noted[256]; /* desc as the last note said it */
	uint32_t noted_session;
	int noted_result;
	char noted[1200];
} st;

/* st.noted and its result: written by whoever installs, read by the poller at a join. */
pthread_mutex_t shim_pyfunc_noted_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the callbacks' side ---- */

bool shim_pyfunc__on(void)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);

	if (hot & SHIM_HOT_PYFUNC)
		return true;
	if (hot & SHIM_HOT_RESTART) /* a forked child: its poller removes what it inherited */
		shim_core__restart();
	return false;
}

static struct pyfunc_thread *thread_state(uint32_t session)
{
	struct pyfunc_thread *pt = me;
	struct shim_thread *t;
	void **slot;

	if (!pt) {
		t = shim_thread__self();
		if (!t)
			return NULL;
		slot = shim_thread__module(t, module_slot);
		if (!*slot && !(*slot = calloc(1, sizeof(struct pyfunc_thread)))) {
			shim_core__add_dropped(1);
			return NULL;
		}
		pt = me = *slot;
		pt->thread = t;
	}
	if (pt->session != session) { /* a new recording: nothing open is its */
		pt->session = session;
		pt->depth = 0;
		pt->seeds_seen = 0;
	}
	if (pt->seeds_epoch != shim_pyfunc_seed__epoch()) {
		pt->seeds_epoch = shim_pyfunc_seed__epoch();
		pt->seeds_seen = 0;
	}
	/* Calls of this thread that were running when tracing began: taken into its stack. */
	if (shim_pyfunc_seed__count() > pt->seeds_seen && pt->depth <= PYFUNC_MAX_DEPTH)
		shim_pyfunc_seed__take(pt->stack, &pt->depth, PYFUNC_MAX_DEPTH, &pt->seeds_seen);
	return pt;
}

void shim_pyfunc__begin(const struct pyfunc_code *c, bool resumed)
{
	uint32_t session = atomic_load_explicit(&shim_session, memory_order_relaxed);
	struct pyfunc_thread *pt;
	struct open_call *o;

	if (!session || !(pt = thread_state(session)))
		return;
	if (pt->depth < PYFUNC_MAX_DEPTH) {
		o = &pt->stack[pt->depth];
		o->code = c->code;
		o->c = c;
		o->resumed = resumed;
		o->before = false;
		o->ts = shim_clock__now(); /* last: the shim's own work is not the call's */
	}
	pt->depth++;
}

bool shim_pyfunc__kept_open(void)
{
	struct pyfunc_thread *pt = me;

	if (pt && pt->session != atomic_load_explicit(&shim_session, memory_order_relaxed))
		pt = NULL; /* a past recording's stack */
	if (shim_pyfunc_seed__untaken_for((unsigned long)pthread_self()))
		return true;
	for (uint32_t i = 0; pt && i < pt->depth && i < PYFUNC_MAX_DEPTH; i++)
		if (pt->stack[i].before)
			return true;
	return false;
}

/* C's piece O of thread TID as a record into T's batch (T locked). */
static void write_call(struct shim_thread *t, uint32_t tid, const struct pyfunc_code *c,
		       const struct open_call *o, uint32_t depth, uint8_t end, uint64_t now,
		       uint32_t session)
{
	uint32_t func, file, domain;
	struct bs_pyfunc_call *r;

	/* The STRINGs queued first: they go before any batch this record is in. */
	func = shim_str__use(c->func, session, tid);
	file = shim_str__use(c->file, session, tid);
	domain = c->domain ? shim_str__use(c->domain, session, tid) : 0;
	r = shim_thread__reserve(t, session, sizeof(*r));
	if (r) {
		shim_hdr(&r->h, BS_REC_PYFUNC_CALL, sizeof(*r), tid, o->ts);
		r->dur = now - o->ts;
		r->func_id = func;
		r->file_id = file;
		r->line = c->line;
		r->domain_id = domain;
		r->depth = depth > 65535 ? 65535 : (uint16_t)depth;
		r->end = end;
		r->flags = (o->resumed ? BS_PYFUNC_RESUMED : 0) |
			   (o->before ? BS_PYFUNC_BEGAN_BEFORE : 0);
		r->_pad = 0;
	}
}

static void emit(struct pyfunc_thread *pt, const struct pyfunc_code *c, const struct open_call *o,
		 uint32_t depth, uint8_t end, uint64_t now, uint32_t session)
{
	shim_thread__lock(pt->thread);
	write_call(pt->thread, shim_thread__tid(pt->thread), c, o, depth, end, now, session);
	shim_thread__unlock(pt->thread);
}

/* C's piece ends on this thread: recorded with END, or dropped (EMIT false: no call). */
static void finish(const struct pyfunc_code *c, uint8_t end, bool emit_it)
{
	uint64_t now = shim_clock__now();
	uint32_t session = atomic_load_explicit(&shim_session, memory_order_relaxed), i;
	/* A call begun before tracing may be this thread's: its stack takes it first. */
	struct pyfunc_thread *pt = session ? thread_state(session) : NULL;

	if (!pt || !pt->depth)
		return;
	if (pt->depth > PYFUNC_MAX_DEPTH) { /* one of those not kept */
		pt->depth--;
		if (emit_it)
			shim_core__add_dropped(1);
		return;
	}
	/*
	 * The top, or below calls whose end was not seen (one begun before the install): those
	 * are let go. A call begun before the install is in the stack when its frame was seen
	 * running then (shim_pyfunc_seed.c); else it has no entry: its end is ignored.
	 */
	for (i = pt->depth; i-- > 0 && pt->depth - i <= 8;) {
		if (pt->stack[i].code != c->code)
			continue;
		pt->depth = i;
		if (emit_it)
			emit(pt, c, &pt->stack[i], i, end, now, session);
		return;
	}
}

void shim_pyfunc__end(const struct pyfunc_code *c, uint8_t end)
{
	finish(c, end, true);
}

void shim_pyfunc__cancel(const struct pyfunc_code *c)
{
	finish(c, 0, false);
}

/* ---- the poller's side ---- */

static void note(uint32_t session, int result, const char *text)
{
	if (!session || (st.noted_session == session && !strcmp(st.noted, text)))
		return;
	pthread_mutex_lock(&shim_pyfunc_noted_lock);
	st.noted_session = session;
	st.noted_result = result;
	snprintf(st.noted, sizeof(st.noted), "%s", text);
	pthread_mutex_unlock(&shim_pyfunc_noted_lock);
	shim_log("%s", text);
	shim_core__status(session, BS_SHIM_EV_PYFUNC, result, text, 0);
}

static void set_on(bool on)
{
	if (on)
		atomic_fetch_or(&shim_hot, SHIM_HOT_PYFUNC);
	else
		atomic_fetch_and(&shim_hot, ~(uint32_t)SHIM_HOT_PYFUNC);
	shim_core__set_state(on ? BS_SHIM_ST_PYFUNC_ON : 0, on ? 0 : BS_SHIM_ST_PYFUNC_ON);
}

/* The spec's text, copied whole and checked, or NULL (being written: the next poll). */
static char *spec_copy(uint32_t gen)
{
	struct bs_pyfunc_spec *s = &bpfsight_pyfunc_spec;
	uint32_t len = *(volatile uint32_t *)&s->len;
	char *text;

	if (len >= sizeof(s->text) || !(text = malloc(len + 1)))
		return NULL;
	memcpy(text, s->text, len + 1);
	atomic_thread_fence(memory_order_acquire);
	if (text[len] || strlen(text) != len || atomic_load((_Atomic uint32_t *)&s->gen) != gen) {
		free(text);
		return NULL;
	}
	return text;
}

/* Whether an entry of TEXT has flag 's' (its third field). */
static bool has_subclass_entry(const char *text)
{
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n'), *f = line;

		end = end ? end : line + strlen(line);
		for (int tab = 0; tab < 2 && f < end; f++)
			tab += *f == '\t';
		for (; f < end && *f != '\t'; f++)
			if (*f == 's')
				return true;
		line = *end ? end + 1 : end;
	}
	return false;
}

/* The GIL, unless the interpreter is going away (a thread taking it then never returns). */
static bool gil_take(int *g)
{
	if (!py.Py_IsInitialized() || py.IsFinalizing())
		return false;
	*g = py.PyGILState_Ensure();
	return true;
}

/*
 * len(sys.modules) without the GIL: a dict's ma_used follows its header in every version
 * the shim takes (a racy read of one word: a change is seen at the next poll at worst).
 */
#define DICT_MA_USED 16

static long modules_len(void)
{
	return st.modules_dict ? *(volatile long *)((char *)st.modules_dict + DICT_MA_USED) : 0;
}

/*
 * Classes created while recording (a script's model class, defined after its imports): the
 * builtin __build_class__, which every class statement calls, is wrapped while a flag 's'
 * entry's class is known, so a subclass's override is traced from the class's creation on,
 * before its first call. Put back when the recording ends (if still ours).
 */
static void added(const struct pyfunc_code *c, bool may_have_run);

static PyObject *build_class_orig; /* a reference, kept: a copy of the wrapper may outlive */
static PyObject *build_class_hook;

static PyObject *build_class(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *cls = py.PyObject_Call(build_class_orig, args, kw);

	(void)self;
	if (cls && st.mech && shim_pyfunc__on())
		shim_pyfunc_resolve_class(cls, added);
	return cls;
}

static struct py_method_def build_class_def = { "__build_class__", (void *)build_class,
						METH_VARARGS_KEYWORDS, NULL };

static PyObject *builtins(void)
{
	PyObject *mods = py.PySys_GetObject("modules");

	return mods ? py.PyDict_GetItemString(mods, "builtins") : NULL;
}

/* GIL held. */
static void hook_classes(void)
{
	PyObject *b = builtins(), *cur;

	if (build_class_hook || !b || !shim_pyfunc_resolve__has_bases())
		return;
	cur = py.PyObject_GetAttrString(b, "__build_class__");
	if (!cur) {
		py.PyErr_Clear();
		return;
	}
	if (!build_class_orig)
		build_class_orig = cur;
	else
		py.Py_DecRef(cur);
	build_class_hook = py.PyCFunction_NewEx(&build_class_def, NULL, NULL);
	if (!build_class_hook ||
	    py.PyObject_SetAttrString(b, "__build_class__", build_class_hook)) {
		py.PyErr_Clear();
		if (build_class_hook)
			py.Py_DecRef(build_class_hook);
		build_class_hook = NULL;
	}
}

/* GIL held. */
static void unhook_classes(void)
{
	PyObject *b = builtins(), *cur;

	if (!build_class_hook)
		return;
	cur = b ? py.PyObject_GetAttrString(b, "__build_class__") : NULL;
	if (cur == build_class_hook &&
	    py.PyObject_SetAttrString(b, "__build_class__", build_class_orig))
		py.PyErr_Clear();
	if (cur)
		py.Py_DecRef(cur);
	py.PyErr_Clear();
	py.Py_DecRef(build_class_hook);
	build_class_hook = NULL;
}

/* A code object found: to the mechanism (GIL held). */
static void added(const struct pyfunc_code *c, bool may_have_run)
{
	if (st.mech && st.mech->add)
		st.mech->add(c, may_have_run);
}

/*
 * The interpreter exits (an atexit function, registered while an entry is missing): why each
 * missing entry is not found is worked out once more, with everything the job defined, for
 * the drain that follows (the shim's own exit handler) to say.
 */
static PyObject *exiting(PyObject *self, PyObject *const *args, long nargs)
{
	(void)self;
	(void)args;
	(void)nargs;
	if (st.mech && st.pid == getpid())
		shim_pyfunc_resolve__why_all();
	py.Py_IncRef(py.none);
	return py.none;
}

static struct py_method_def exiting_def = { "bpfsight_pyfunc_exiting", (void *)exiting,
					    METH_FASTCALL, NULL };

/* atexit.register/unregister(our function) (GIL held): atexit is a builtin module. */
static void atexit_call(const char *method)
{
	PyObject *mod = py.PyImport_ImportModule("atexit"), *ret;

	if (mod) {
		ret = py.PyObject_CallMethod(mod, method, "O", st.atexit_hook);
		if (ret)
			py.Py_DecRef(ret);
		py.Py_DecRef(mod);
	}
	py.PyErr_Clear();
}

static void atexit_hook(bool on)
{
	if (on == !!st.atexit_hook)
		return;
	if (on) {
		st.atexit_hook = py.PyCFunction_NewEx(&exiting_def, NULL, NULL);
		if (st.atexit_hook)
			atexit_call("register");
		py.PyErr_Clear();
		return;
	}
	atexit_call("unregister");
	py.Py_DecRef(st.atexit_hook);
	st.atexit_hook = NULL;
}

/* Calls of the codes from FIRST on running now: kept, and their ends watched. GIL held. */
static void seed_scan(uint32_t first, const PyObject *skip)
{
	uint32_t seeds = shim_pyfunc_seed__count();

	shim_pyfunc_seed__scan(first, skip, shim_clock__now());
	if (shim_pyfunc_seed__count() != seeds && st.mech->seeded)
		st.mech->seeded();
}

/*
 * GIL held: resolve again, the new code objects handed to the mechanism. EARLY: the first, as
 * the interpreter starts: the script has not run, so nothing of it is missing yet.
 */
static void resolve(uint32_t session, bool early)
{
	char missing[768], text[1200];
	uint32_t before = shim_pyfunc_codes__count();
	int n;

	st.modules = modules_len();
	st.last_resolve = shim_now();
	atomic_store(&st.found, false);
	if (st.mech->refresh)
		st.mech->refresh();
	n = shim_pyfunc_resolve(added, missing, sizeof(missing));
	if (n < 0)
		return;
	hook_classes();
	/* A code object found running: its call began before tracing did. */
	seed_scan(before, NULL);
	if (st.mech->scan)
		st.mech->scan(shim_pyfunc_resolve__scanning());
	atexit_hook(n > 0);
	if (shim_pyfunc_codes__count() == st.noted_codes && n == st.missing &&
	    !strcmp(st.desc, st.desc_noted))
		return;
	snprintf(st.desc_noted, sizeof(st.desc_noted), "%s", st.desc);
	st.missing = n;
	st.noted_codes = shim_pyfunc_codes__count();
	if (early)
		snprintf(text, sizeof(text),
			 "Python 3.%d: %s: in as the interpreter started, each function traced "
			 "from its first call",
			 py.minor, st.desc);
	else
		snprintf(text, sizeof(text), "Python 3.%d: %s: %u code objects traced%s%s",
			 py.minor, st.desc, st.noted_codes, n ? "; not found yet: " : "",
			 n ? missing : "");
	note(session, 0, text);
}

const struct pyfunc_code *shim_pyfunc__discover(PyObject *code, PyObject *name, bool *candidate)
{
	const struct pyfunc_code *c;
	uint32_t before = shim_pyfunc_codes__count();

	*candidate = false;
	if (!st.mech || st.discovering || !shim_pyfunc__on())
		return NULL;
	st.discovering = true;
	c = shim_pyfunc_resolve__discover(code, name, added, candidate);
	if (shim_pyfunc_codes__count() != before) {
		hook_classes();
		/* Others found with it (a class's overrides) may be running: as at a resolve. */
		seed_scan(before, code);
		atomic_store(&st.found, true); /* the poller says it */
	}
	st.discovering = false;
	return c;
}

/* GIL held. */
static void remove_all(void)
{
	set_on(false);
	unhook_classes();
	atexit_hook(false);
	if (st.mech)
		st.mech->remove();
	shim_pyfunc_seed__clear();
	shim_pyfunc_codes__clear();
	shim_pyfunc_resolve__unload();
	if (st.modules_dict)
		py.Py_DecRef(st.modules_dict);
	st.modules_dict = NULL;
	st.mech = NULL;
}

/*
 * Everything off. FORGET: the spec was this recording's, which has ended: the next one
 * writes its own. Not in a forked child, whose copy is its parent's recording's, still on
 * (the child is traced anew from it) or written again for the child by the recorder: set to
 * 0 here after that write, the child would wait for a spec never written again.
 */
static void uninstall_spec(bool forget)
{
	int g;

	if (!st.mech)
		return;
	set_on(false);
	if (gil_take(&g)) {
		remove_all();
		py.PyGILState_Release(g);
	}
	st.mech = NULL;
	free(st.text);
	st.text = NULL;
	/* A newer write stays: compare and swap. */
	if (forget)
		atomic_compare_exchange_strong((_Atomic uint32_t *)&bpfsight_pyfunc_spec.gen,
					       &st.gen, 0);
}

static void uninstall(void)
{
	uninstall_spec(true);
}

/*
 * GIL held: the hooks in, for spec TEXT of GEN (taken over: freed here on failure). EARLY:
 * as the interpreter starts.
 */
static void install_held(uint32_t session, uint32_t gen, char *text, bool early)
{
	const struct pyfunc_mech *m = py.minor >= 12 ? &shim_pyfunc_mon : &shim_pyfunc_eval;
	char why[512], other[512];
	int err;

	if (st.mech) { /* another thread installed it meanwhile (the poller, the early hook) */
		free(text);
		return;
	}
	err = shim_pyfunc_resolve__load(text);
	if (!err)
		err = m->install(why, sizeof(why), st.desc, sizeof(st.desc));
	if (m == &shim_pyfunc_eval && (err == -EBUSY || err == -ENOSYS)) {
		/* The slot is another's (torch.compile's TorchDynamo): the profile function. */
		snprintf(other, sizeof(other), "%.200s", why);
		m = &shim_pyfunc_prof;
		err = m->install(why, sizeof(why), st.desc, sizeof(st.desc));
		if (!err)
			snprintf(st.desc + strlen(st.desc), sizeof(st.desc) - strlen(st.desc),
				 " (%s)", other);
	}
	if (err) {
		shim_pyfunc_resolve__unload();
		free(text);
		if (err == -ENOMEM)
			snprintf(why, sizeof(why), "Python functions not traced: out of memory");
		note(session, err, why);
		st.refused_gen = gen; /* said; a new recording's spec tries again */
		return;
	}
	st.mech = m;
	st.pid = getpid();
	st.gen = gen;
	st.text = text;
	st.missing = -1;
	st.noted_codes = ~0u;
	st.subclasses = has_subclass_entry(text);
	/*
	 * A new recorder's spec: its notes are news even within one session (it attached
	 * before the shim saw the last one's batch semaphore fall, and joined its session).
	 */
	st.noted_session = 0;
	st.modules_dict = py.PySys_GetObject("modules");
	if (st.modules_dict)
		py.Py_IncRef(st.modules_dict);
	shim_pyfunc_seed__clear();
	set_on(true);
	resolve(session, early);
}

static void install(uint32_t session, uint32_t gen)
{
	char *text = spec_copy(gen);
	int g;

	if (!text)
		return;
	if (!gil_take(&g)) {
		free(text);
		return;
	}
	install_held(session, gen, text, false);
	py.PyGILState_Release(g);
}

/* A recording wants Python functions here now (its session, its spec's gen), or 0. */
static uint32_t wanted(uint32_t *gen)
{
	uint32_t session = atomic_load(&shim_session);

	if (!session || SHIM_SEM(batch) == 0 || SHIM_SEM(pyfunc) == 0)
		return 0;
	*gen = atomic_load((_Atomic uint32_t *)&bpfsight_pyfunc_spec.gen);
	return *gen ? session : 0;
}

int shim_pyfunc__install_early(void)
{
	uint32_t session, gen = 0;
	char why[512], *text;
	int err;

	/* The poller's first look may not have begun the session yet: it does now. */
	if (!atomic_load(&shim_session))
		shim_core__poll_now();
	session = wanted(&gen);
	if (!session)
		return -EAGAIN;
	err = shim_pyfunc_api__find(why, sizeof(why));
	if (err) {
		note(session, err, why);
		return err;
	}
	if (st.mech || gen == st.refused_gen || !(text = spec_copy(gen)))
		return -EAGAIN;
	shim_clock__poll();
	install_held(session, gen, text,
		     true); /* the caller holds the GIL: an audit hook runs so */
	return st.mech ? 0 : -EINVAL;
}

static void pyfunc_poll(void)
{
	uint32_t gen = 0, session = wanted(&gen);
	char why[512];
	int err, g;

	if (st.mech && st.pid != getpid()) /* a forked child: the parent's, not ours */
		uninstall_spec(false);
	if (!atomic_load(&shim_session) || SHIM_SEM(batch) == 0 || SHIM_SEM(pyfunc) == 0) {
		uninstall();
		return;
	}
	if (!session)
		return; /* the recorder has not written its spec yet */
	err = shim_pyfunc_api__find(why, sizeof(why));
	if (err == -ESRCH) {
		/* The launched wrapper (sh, env, a launcher that is not Python): its children are. */
		note(session, -ENOENT,
		     "no Python in this process (yet): its Python children are "
		     "traced, and it is if it loads libpython");
		return;
	}
	if (err == -ENOENT) {
		/* Armed in launch mode: the interpreter's start installs everything itself. */
		if (!shim_pyfunc_early__armed())
			note(session, err,
			     "no initialized Python interpreter in the process (yet)");
		return;
	}
	if (err) {
		note(session, err, why);
		return;
	}
	shim_clock__poll();
	if (st.mech && gen != st.gen)
		uninstall(); /* a new spec: installed afresh below */
	if (!st.mech) {
		if (gen != st.refused_gen)
			install(session, gen);
		return;
	}
	if (!(atomic_load(&shim_hot) & SHIM_HOT_PYFUNC))
		set_on(true);
	/* Its hook's place taken (torch.compile came): the mechanism falls back, said anew. */
	if (st.mech->lost && st.mech->lost() && gil_take(&g)) {
		if (st.mech)
			st.mech->recover(st.desc, sizeof(st.desc));
		st.noted_codes = ~0u;
		atomic_store(&st.found, true);
		py.PyGILState_Release(g);
	}
	/* 3.11's swapped functions: a code object's holders changed (a function made since?). */
	if (st.mech->stale && st.mech->stale() && gil_take(&g)) {
		char late[400];

		if (st.mech && st.mech->look(late, sizeof(late)))
			atomic_store(&st.found, true); /* its description changed: said anew */
		if (st.mech && late[0]) {
			shim_log("%s", late);
			shim_core__status(session, BS_SHIM_EV_PYFUNC, 0, late, 0);
		}
		py.PyGILState_Release(g);
	}
	/* Functions imported or defined since: sys.modules grew, something is missing, or a
	 * callback found one at its first call (said now). */
	if (modules_len() == st.modules && !atomic_load(&st.found) &&
	    ((!st.missing && !st.subclasses && !(st.mech->pending && st.mech->pending())) ||
	     shim_now() - st.last_resolve < RETRY_NS))
		return;
	if (!gil_take(&g))
		return;
	if (st.mech)
		resolve(session, false);
	py.PyGILState_Release(g);
}

struct drain_arg {
	uint32_t session;
	uint64_t now;
};

/* O's entry in the table, if O is still what it was (a stale read fails the check). */
static const struct pyfunc_code *open_code(const struct open_call *o, uint64_t now)
{
	const struct pyfunc_code *c = o->c;

	return o->ts && o->ts <= now && c && c->code && c->code == o->code ? c : NULL;
}

/*
 * Thread T's calls still open (T locked). Read without the GIL: the drain holds the shim's
 * ctl, which a thread holding the GIL may be waiting for (cuInit's injection entry), so it
 * must not wait for the GIL. A thread's stack may move meanwhile, which can only cut the list
 * short or repeat a call that just ended; each entry points at its table entry, which is never
 * freed, and is checked against it.
 */
static void send_open(struct shim_thread *t, void *arg)
{
	struct pyfunc_thread *pt = *shim_thread__module(t, module_slot);
	const struct drain_arg *d = arg;
	const struct pyfunc_code *c;
	uint32_t depth;

	if (!pt || pt->session != d->session)
		return;
	depth = *(volatile uint32_t *)&pt->depth;
	for (uint32_t i = 0; i < depth && i < PYFUNC_MAX_DEPTH; i++) {
		struct open_call o = pt->stack[i];

		if ((c = open_code(&o, d->now)))
			write_call(t, shim_thread__tid(t), c, &o, i, BS_PYFUNC_END_OPEN, d->now,
				   d->session);
	}
}

/* A call begun before tracing whose thread never took it (made no named call since). */
static void send_untaken(const struct open_call *o, uint32_t tid, uint32_t depth, void *arg)
{
	const struct drain_arg *d = arg;
	struct shim_thread *t = shim_thread__self();
	const struct pyfunc_code *c = open_code(o, d->now);

	if (!t || !c)
		return;
	shim_thread__lock(t);
	write_call(t, tid, c, o, depth, BS_PYFUNC_END_OPEN, d->now, d->session);
	shim_thread__unlock(t);
}

static void say_never_found(const char *text, void *arg)
{
	const struct drain_arg *d = arg;

	shim_log("%s", text);
	shim_core__status(d->session, BS_SHIM_EV_PYFUNC, BS_PYFUNC_NEVER_FOUND, text, 0);
}

/*
 * A drain (the recording's end, or the exit): every call still running, as a record of its
 * own ending now (BS_PYFUNC_END_OPEN), so a function that outlives the recording (a training
 * loop) is in it. They stay open in the shim: their ends are recorded if the recording goes
 * on. And each entry never found, with why (the last resolve's, or the exit's).
 */
static void pyfunc_drain(uint32_t session, uint64_t now)
{
	struct drain_arg d = { session, now };

	if (!st.mech || st.pid != getpid())
		return;
	shim_buf__for_each(send_open, &d)
		;
	shim_pyfunc_seed__each_untaken(send_untaken, &d);
	shim_pyfunc_resolve__each_never_found(say_never_found, &d);
}

static void pyfunc_thread_gone(void *state)
{
	if (me == state)
		me = NULL;
	free(state);
}

/*
 * A tracer joined this session (a child that installed its own hooks before the recorder
 * attached to it, a second recorder): the last note goes again, so it says which mechanism.
 */
static void pyfunc_join(uint32_t session)
{
	char text[sizeof(st.noted)];
	int result;

	pthread_mutex_lock(&shim_pyfunc_noted_lock);
	snprintf(text, sizeof(text), "%s", st.noted);
	result = st.noted_result;
	pthread_mutex_unlock(&shim_pyfunc_noted_lock);
	if (st.mech && st.pid == getpid() && text[0])
		shim_core__status(session, BS_SHIM_EV_PYFUNC, result, text, 0);
}

static void pyfunc_state(uint32_t s)
{
	STAP_PROBE1(bpfsight, pyfunc, (uint64_t)s);
}

/* Nothing installed (a fork's copy is, until the poll removes it), nothing asked for. */
static bool pyfunc_idle(void)
{
	return !st.mech && SHIM_SEM(pyfunc) == 0;
}

static void pyfunc_init(void)
{
	module_slot = shim_module__slot(&shim_pyfunc_module);
	shim_pyfunc_early__arm();
}

const struct shim_module shim_pyfunc_module = {
	.name = "pyfunc",
	.init = pyfunc_init,
	.poll = pyfunc_poll,
	.state = pyfunc_state,
	.thread_gone = pyfunc_thread_gone,
	.drain = pyfunc_drain,
	.fork_clear = BS_SHIM_ST_PYFUNC_ON,
	.fork_child = shim_pyfunc_eval__forked,
	.join = pyfunc_join,
	.idle = pyfunc_idle,
};
