// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The pyfunc module (shim_pyfunc.h): the named Python functions' calls, while a tracer wants
 * them (the bpfsight:pyfunc semaphore) and has written what to trace into the exported spec
 * buffer (struct bs_pyfunc_spec, bpf/pyfunc_records.h).
 *
 * The poller, every 50 ms, with the GIL taken only when something changes:
 *   - semaphore up and a spec (gen != 0) it has not installed: the code objects resolved
 *     (shim_pyfunc_resolve.c) and the mechanism installed (3.12+: sys.monitoring; before: the
 *     C profile function), STATUS(PYFUNC) saying which and what was not found;
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

struct open_call {
	const PyObject *code;
	uint64_t ts;
	bool resumed;
};

struct pyfunc_thread {
	struct shim_thread *thread;
	uint32_t session;
	uint32_t depth; /* may exceed PYFUNC_MAX_DEPTH: those above it are not kept */
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
	char desc[128];
	uint32_t noted_session;
	char noted[1024];
} st;

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
	}
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
		o->resumed = resumed;
		o->ts = shim_clock__now(); /* last: the shim's own work is not the call's */
	}
	pt->depth++;
}

/* C's piece O as a record into its thread's batch (T locked). */
static void write_call(struct shim_thread *t, const struct pyfunc_code *c,
		       const struct open_call *o, uint32_t depth, uint8_t end, uint64_t now,
		       uint32_t session)
{
	uint32_t tid = shim_thread__tid(t), func, file, domain;
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
		r->flags = o->resumed ? BS_PYFUNC_RESUMED : 0;
		r->_pad = 0;
	}
}

static void emit(struct pyfunc_thread *pt, const struct pyfunc_code *c, const struct open_call *o,
		 uint32_t depth, uint8_t end, uint64_t now, uint32_t session)
{
	shim_thread__lock(pt->thread);
	write_call(pt->thread, c, o, depth, end, now, session);
	shim_thread__unlock(pt->thread);
}

void shim_pyfunc__end(const struct pyfunc_code *c, uint8_t end)
{
	uint64_t now = shim_clock__now();
	uint32_t session = atomic_load_explicit(&shim_session, memory_order_relaxed), i;
	struct pyfunc_thread *pt = me;

	if (!pt || !session || pt->session != session || !pt->depth)
		return;
	if (pt->depth > PYFUNC_MAX_DEPTH) { /* one of those not kept */
		pt->depth--;
		shim_core__add_dropped(1);
		return;
	}
	/*
	 * The top, or below calls whose end was not seen (one begun before the install): those
	 * are let go. A call begun before the install has no entry: its end is ignored.
	 */
	for (i = pt->depth; i-- > 0 && pt->depth - i <= 8;) {
		if (pt->stack[i].code != c->code)
			continue;
		pt->depth = i;
		emit(pt, c, &pt->stack[i], i, end, now, session);
		return;
	}
}

/* ---- the poller's side ---- */

static void note(uint32_t session, int result, const char *text)
{
	if (!session || (st.noted_session == session && !strcmp(st.noted, text)))
		return;
	st.noted_session = session;
	snprintf(st.noted, sizeof(st.noted), "%s", text);
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
static PyObject *build_class_orig; /* a reference, kept: a copy of the wrapper may outlive */
static PyObject *build_class_hook;

static PyObject *build_class(PyObject *self, PyObject *args, PyObject *kw)
{
	PyObject *cls = py.PyObject_Call(build_class_orig, args, kw);

	(void)self;
	if (cls && st.mech && shim_pyfunc__on())
		shim_pyfunc_resolve_class(cls, st.mech->add);
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

/* GIL held: resolve again, the new code objects handed to the mechanism. */
static void resolve(uint32_t session)
{
	char missing[768], text[1024];
	uint32_t before = shim_pyfunc_codes__count();
	int n;

	st.modules = modules_len();
	st.last_resolve = shim_now();
	if (st.mech->refresh)
		st.mech->refresh();
	n = shim_pyfunc_resolve(st.text, st.mech->add, missing, sizeof(missing));
	if (n < 0)
		return;
	hook_classes();
	if (shim_pyfunc_codes__count() == before && n == st.missing && before)
		return;
	st.missing = n;
	snprintf(text, sizeof(text), "Python 3.%d: %s: %u code objects traced%s%s", py.minor,
		 st.desc, shim_pyfunc_codes__count(), n ? "; not found yet: " : "",
		 n ? missing : "");
	note(session, 0, text);
}

/* GIL held. */
static void remove_all(void)
{
	set_on(false);
	unhook_classes();
	if (st.mech)
		st.mech->remove();
	shim_pyfunc_codes__clear();
	if (st.modules_dict)
		py.Py_DecRef(st.modules_dict);
	st.modules_dict = NULL;
	st.mech = NULL;
}

static void uninstall(void)
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
	/* The spec was this recording's: the next one writes its own (a newer write stays). */
	atomic_compare_exchange_strong((_Atomic uint32_t *)&bpfsight_pyfunc_spec.gen, &st.gen, 0);
}

static void install(uint32_t session, uint32_t gen)
{
	const struct pyfunc_mech *m = py.minor >= 12 ? &shim_pyfunc_mon : &shim_pyfunc_prof;
	char why[512];
	char *text = spec_copy(gen);
	int g, err;

	if (!text)
		return;
	if (!gil_take(&g)) {
		free(text);
		return;
	}
	err = m->install(why, sizeof(why), st.desc, sizeof(st.desc));
	if (err) {
		py.PyGILState_Release(g);
		free(text);
		note(session, err, why);
		st.refused_gen = gen; /* said; a new recording's spec tries again */
		return;
	}
	st.mech = m;
	st.pid = getpid();
	st.gen = gen;
	st.text = text;
	st.missing = -1;
	st.subclasses = has_subclass_entry(text);
	/*
	 * A new recorder's spec: its notes are news even within one session (it attached
	 * before the shim saw the last one's batch semaphore fall, and joined its session).
	 */
	st.noted_session = 0;
	st.modules_dict = py.PySys_GetObject("modules");
	if (st.modules_dict)
		py.Py_IncRef(st.modules_dict);
	set_on(true);
	resolve(session);
	py.PyGILState_Release(g);
}

static void pyfunc_poll(void)
{
	uint32_t session = atomic_load(&shim_session), gen;
	bool want = session && SHIM_SEM(batch) > 0 && SHIM_SEM(pyfunc) > 0;
	char why[512];
	int err, g;

	if (st.mech && st.pid != getpid()) /* a forked child: the parent's, not ours */
		uninstall();
	if (!want) {
		uninstall();
		return;
	}
	gen = atomic_load((_Atomic uint32_t *)&bpfsight_pyfunc_spec.gen);
	if (!gen)
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
		note(session, err, "no initialized Python interpreter in the process (yet)");
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
	/* Functions imported or defined since: sys.modules grew, or something is missing. */
	if (modules_len() == st.modules &&
	    ((!st.missing && !st.subclasses) || shim_now() - st.last_resolve < RETRY_NS))
		return;
	if (!gil_take(&g))
		return;
	resolve(session);
	py.PyGILState_Release(g);
}

struct drain_arg {
	uint32_t session;
	uint64_t now;
};

/*
 * Thread T's calls still open (T locked). Read without the GIL: the drain holds the shim's
 * ctl, which a thread holding the GIL may be waiting for (cuInit's injection entry), so it
 * must not wait for the GIL. The table is the poller's own (it alone changes it, and this is
 * the poller or the exit); a thread's stack may move meanwhile, which can only cut the list
 * short or repeat a call that just ended: each entry is checked against the table.
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

		if (o.ts && o.ts <= d->now && (c = shim_pyfunc_codes__get(o.code)))
			write_call(t, c, &o, i, BS_PYFUNC_END_OPEN, d->now, d->session);
	}
}

/*
 * A drain: every call still running, as a record of its own ending now (BS_PYFUNC_END_OPEN),
 * so a function that outlives the recording (a training loop) is in it. They stay open in
 * the shim: their ends are recorded if the recording goes on.
 */
static void pyfunc_drain(uint32_t session, uint64_t now)
{
	struct drain_arg d = { session, now };

	if (st.mech && st.pid == getpid())
		shim_buf__for_each(send_open, &d)
			;
}

static void pyfunc_thread_gone(void *state)
{
	if (me == state)
		me = NULL;
	free(state);
}

static void pyfunc_state(uint32_t s)
{
	STAP_PROBE1(bpfsight, pyfunc, (uint64_t)s);
}

static void pyfunc_init(void)
{
	module_slot = shim_module__slot(&shim_pyfunc_module);
}

const struct shim_module shim_pyfunc_module = {
	.name = "pyfunc",
	.init = pyfunc_init,
	.poll = pyfunc_poll,
	.state = pyfunc_state,
	.thread_gone = pyfunc_thread_gone,
	.drain = pyfunc_drain,
	.fork_clear = BS_SHIM_ST_PYFUNC_ON,
};
