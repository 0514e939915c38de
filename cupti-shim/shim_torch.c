// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * PyTorch's ops as torch records them (shim_torch.h): a RecordFunction global callback,
 * registered by the poller while a tracer wants torch ops and removed when none does, so a
 * job nobody records pays nothing (torch skips RecordFunction entirely without callbacks).
 *
 * The callback torch holds is a trampoline in memory of its own that is never unmapped: its
 * start and end each load a slot and jump there, or return at once when the slot is empty.
 * torch copies the callback's two pointers into every RecordFunction that starts while it is
 * registered, so it calls the end of an op that began before removeCallback after it, on any
 * thread, maybe after the shim stopped: the slots are emptied when the recording ends and at
 * exit, and the code torch calls is never gone.
 *
 * While recording, each thread keeps its open ops (the RecordFunction's address and start) on
 * a stack of its own, in its shim_thread; the end pops it and writes one BS_REC_TORCH_OP into
 * the thread's batch. The end of an op that began on another thread, or before the recording,
 * is not recorded; an op nested deeper than TORCH_MAX_DEPTH is counted dropped. A step
 * boundary (Optimizer.step#..., ProfilerStep#N) sends the thread's batch at once, so that
 * --capture-range=steps sees steps as they end.
 */
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"
#include "shim_clock.h"
#include "shim_torch.h"
#include "shim_usdt.h"
#include "torch_records.h"

extern const struct shim_module shim_torch_module;
static int module_slot; /* its per-thread state (shim_thread__module), set at init */

/* The torch family's control sites: bpfsight:torch and bpfsight:torch_shapes. */
SHIM_SEMAPHORE(torch);
SHIM_SEMAPHORE(torch_shapes);
/*
 * Its stack site, bpfsight:torch_op_stack(ts, dur) (--stacks=torch): fired for each op
 * recorded, with the record's own ts; BPF sends the thread's stack as that op's (shim.bpf.c).
 * An op fires it when it ends, after its end time: the op's own time does not include the
 * stack's cost. A user scope (record_function) fires it at its start (dur ~0: whatever the
 * threshold), as its end runs in other Python code (__exit__).
 */
SHIM_SEMAPHORE(torch_op_stack);
#define STACK_PROBE(ts, dur) STAP_PROBE2(bpfsight, torch_op_stack, (uint64_t)(ts), (uint64_t)(dur))

#define TORCH_MAX_DEPTH 64
#define NAME_CACHE	256 /* per thread: schema names by address (they live as long as torch) */
#define SHAPES_MAX	1024
#define CONCRETE_MAX	2048
#define INPUTS_FIRST	1024  /* slots of a thread's table of input texts at first */
#define INPUTS_MAX	16384 /* ... and at most (half of them used): then emptied */
#define INPUTS_WORDS	(2 + TORCH_SHAPES_WORDS + TORCH_CONCRETE_WORDS)

struct open_op {
	const void *rf;
	uint64_t ts;
	uint32_t shapes_id;
	uint32_t concrete_id;
};

/*
 * --torch-shapes' texts by what was read: an op's words (the count of shape words and of
 * concrete words, then those words) and the interned texts they made, in a table per thread
 * (open addressing, at most half full). Most ops of a training step repeat their inputs at
 * every step (and a model's layers repeat each other's): those cost the read, a hash and a
 * compare. Three steps of tests/workloads' small transformer have 893 distinct inputs in
 * 25,581 ops. A job whose shapes never repeat fills the table: it is emptied at INPUTS_MAX.
 */
struct inputs_text {
	uint64_t hash;
	uint64_t *words; /* malloc'd, NWORDS; NULL: an empty slot */
	size_t nwords;
	struct shim_str *shapes, *concrete;
};

struct torch_inputs {
	uint64_t words[INPUTS_WORDS]; /* the op's, as read */
	struct inputs_text *slots;    /* CAP of them, a power of 2; USED taken */
	size_t cap, used;
};

struct torch_thread {
	struct shim_thread *thread;  /* its buffer (freed with it: shim_thread's torch slot) */
	struct torch_inputs *inputs; /* --torch-shapes: made at its first op with shapes */
	uint32_t session;	     /* the recording session the stack belongs to */
	uint32_t depth;		     /* may exceed TORCH_MAX_DEPTH: those above it are not kept */
	struct open_op stack[TORCH_MAX_DEPTH];
	struct {
		const char *text;
		struct shim_str *s;
	} names[NAME_CACHE];
};

/* The trampoline: code (read + exec) then the slots (read + write), never unmapped. */
#define TRAMP_PAGE  4096
#define TRAMP_START 0
#define TRAMP_END   32

struct tramp_slots {
	_Atomic(void *) start;
	_Atomic(void *) end;
};

static uint8_t *tramp;
static struct tramp_slots *slots;

/* The poller's state (only it writes these, but for layout_bad). */
static struct torch_lib lib;
static int lib_err = -ENOENT; /* -ENOENT: not found yet; other: refused for good */
static char lib_why[PATH_MAX + 256];
static unsigned long long seen_adds;
static bool registered, reg_shapes;
static uint64_t handle;
static uint32_t noted_session;
static char noted[sizeof(lib_why)];
static _Atomic bool checked;	/* the layout was checked against a live RecordFunction */
static _Atomic bool layout_bad; /* ... and found wrong: never registered again */
static char bad_why[384];
static _Atomic bool shapes_on;

static __thread struct torch_thread *me;

/* ---- the trampoline ---- */

/*
 * x86-64 code of both entries: endbr64; mov slot(%rip),%rax; test %rax,%rax; je 1f;
 * jmp *%rax; 1: the empty answer. start(ret, rf) returns a null unique_ptr in *ret (returned
 * by hidden pointer: it has a destructor) and ret; end returns.
 */
static const uint8_t tramp_start[] = {
	0xf3, 0x0f, 0x1e, 0xfa,			  /* endbr64 */
	0x48, 0x8b, 0x05, 0,	0,    0,    0,	  /* mov disp32(%rip),%rax */
	0x48, 0x85, 0xc0,			  /* test %rax,%rax */
	0x74, 0x02,				  /* je +2 */
	0xff, 0xe0,				  /* jmp *%rax */
	0x48, 0xc7, 0x07, 0x00, 0x00, 0x00, 0x00, /* movq $0,(%rdi) */
	0x48, 0x89, 0xf8,			  /* mov %rdi,%rax */
	0xc3,					  /* ret */
};
static const uint8_t tramp_end[] = {
	0xf3, 0x0f, 0x1e, 0xfa,		 /* endbr64 */
	0x48, 0x8b, 0x05, 0,	0, 0, 0, /* mov disp32(%rip),%rax */
	0x48, 0x85, 0xc0,		 /* test %rax,%rax */
	0x74, 0x02,			 /* je +2 */
	0xff, 0xe0,			 /* jmp *%rax */
	0xc3,				 /* ret */
};

#define TRAMP_DISP_AT 7	 /* where disp32 is in both */
#define TRAMP_NEXT_AT 11 /* the address disp32 counts from */

static void tramp_put(uint8_t *code, const uint8_t *tmpl, size_t len, const void *slot)
{
	int32_t disp = (int32_t)((const uint8_t *)slot - (code + TRAMP_NEXT_AT));

	memcpy(code, tmpl, len);
	memcpy(code + TRAMP_DISP_AT, &disp, sizeof(disp));
}

/* Once per process (a forked child has its copy). False when no executable memory. */
static bool tramp_build(char *why, size_t len)
{
	uint8_t *m;

	if (tramp)
		return true;
#if !defined(__x86_64__)
	snprintf(why, len, "torch ops not recorded: the callback's trampoline is x86-64 code");
	return false;
#endif
	m = mmap(NULL, 2 * TRAMP_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		snprintf(why, len, "torch ops not recorded: mmap of the callback's trampoline: %s",
			 strerror(errno));
		return false;
	}
	slots = (struct tramp_slots *)(m + TRAMP_PAGE);
	tramp_put(m + TRAMP_START, tramp_start, sizeof(tramp_start), &slots->start);
	tramp_put(m + TRAMP_END, tramp_end, sizeof(tramp_end), &slots->end);
	if (mprotect(m, TRAMP_PAGE, PROT_READ | PROT_EXEC)) {
		/* e.g. SELinux's execmem denied: nothing was handed to torch, so unmapping is safe */
		snprintf(why, len,
			 "torch ops not recorded: the callback's trampoline cannot be made "
			 "executable (mprotect: %s)",
			 strerror(errno));
		munmap(m, 2 * TRAMP_PAGE);
		return false;
	}
	tramp = m;
	return true;
}

/* ---- the handlers (any thread running ops) ---- */

/* The calling thread's state for SESSION, or NULL when it cannot have one. */
static struct torch_thread *thread_state(uint32_t session)
{
	struct torch_thread *tt = me;
	struct shim_thread *t;
	void **slot;

	if (!tt) {
		t = shim_thread__self();
		if (!t)
			return NULL;
		slot = shim_thread__module(t, module_slot);
		if (!*slot && !(*slot = calloc(1, sizeof(struct torch_thread)))) {
			shim_core__add_dropped(1);
			return NULL;
		}
		tt = me = *slot;
		tt->thread = t;
	}
	if (tt->session != session) { /* a new recording: nothing open is ours */
		tt->session = session;
		tt->depth = 0;
	}
	return tt;
}

/*
 * kwinputs_ (an std::unordered_map<std::string, IValue>, 2.4 and later) lies between inputs_
 * and outputs_, which moves fwd_thread_id_ from 0xf8 to 0x130. libstdc++'s map says what it
 * is: its rehash policy's max load factor (a float at 32) is 1.0; empty, it keeps its one
 * bucket inside itself (its bucket array points 48 bytes past its start, its bucket count is
 * 1); holding kwargs (a user scope's), a heap array of more buckets than elements. Before
 * 2.4 the same bytes are outputs_ (null at an op's start), fwd_thread_id_ and handle_.
 */
#define KWINPUTS_AT	    0xe0
#define KWINPUTS_BUCKET	    48
#define KWINPUTS_LOAD	    32
#define FWD_TID_NO_KWINPUTS 0xf8

static bool has_kwinputs(const uint8_t *rf)
{
	const uint8_t *kw = rf + KWINPUTS_AT;
	const uint8_t *buckets = *(const uint8_t *const *)kw;
	uint64_t nbuckets = *(const uint64_t *)(kw + 8), n = *(const uint64_t *)(kw + 24);
	float load;

	memcpy(&load, kw + KWINPUTS_LOAD, sizeof(load));
	if (load != 1.0f)
		return false;
	if (nbuckets == 1)
		return buckets == kw + KWINPUTS_BUCKET;
	return buckets && nbuckets > 1 && nbuckets < (1u << 20) && n >= 1 && n <= nbuckets;
}

/*
 * The first op after registering: the fields read at the layout's offsets must be what
 * torch says they are, else nothing is recorded (the poller removes the callback). The
 * thread id is torch's own answer; the rest are values only the right field can hold: a
 * scope below NUM_SCOPES, a name kind of 0 or 1, a sequence number of -1 or more, a forward
 * thread id that is one of torch's small counters, inputs_ as an ArrayRef (a count that is
 * small, data where there is a count), and kwinputs_ where the version has it and absent
 * where it has not (has_kwinputs).
 */
static bool check_layout(const void *rf)
{
	const struct torch_layout *l = lib.layout;
	const uint8_t *p = rf;
	uint64_t tid = *(const uint64_t *)(p + l->thread_id), want = lib.current_thread_id();
	uint64_t fwd = *(const uint64_t *)(p + l->fwd_tid);
	const void *in = *(const void *const *)(p + l->inputs);
	uint64_t nin = *(const uint64_t *)(p + l->inputs + 8);
	uint8_t scope = p[l->scope], idx = p[l->fn_index];
	int64_t seq = *(const int64_t *)(p + l->seq);
	bool kw = has_kwinputs(p), want_kw = l->fwd_tid != FWD_TID_NO_KWINPUTS;

	if (tid == want && scope < l->num_scopes && idx <= 1 && seq >= -1 && fwd < (1ull << 32) &&
	    nin < (1u << 16) && (!nin || in) && kw == want_kw) {
		atomic_store(&checked, true);
		return true;
	}
	snprintf(bad_why, sizeof(bad_why),
		 "torch ops not recorded: torch %s: the RecordFunction layout check failed "
		 "(thread id %llu, expected %llu; scope %u; name kind %u; sequence number %lld; "
		 "forward thread %llu; inputs %llu; kwinputs %s, expected %s)",
		 lib.version, (unsigned long long)tid, (unsigned long long)want, scope, idx,
		 (long long)seq, (unsigned long long)fwd, (unsigned long long)nin,
		 kw ? "found" : "not found", want_kw ? "found" : "none");
	atomic_store(&layout_bad, true);
	atomic_fetch_and(&shim_hot, ~(uint32_t)SHIM_HOT_TORCH);
	return false;
}

static uint64_t words_hash(const uint64_t *w, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

/* Empty TI's table (it keeps its slots). */
static void inputs_clear(struct torch_inputs *ti)
{
	if (!ti->slots)
		return;
	for (size_t i = 0; i < ti->cap; i++)
		free(ti->slots[i].words);
	memset(ti->slots, 0, ti->cap * sizeof(*ti->slots));
	ti->used = 0;
}

/* TI's table twice as large (INPUTS_FIRST slots at first); false when out of memory. */
static bool inputs_grow(struct torch_inputs *ti)
{
	size_t cap = ti->cap ? 2 * ti->cap : INPUTS_FIRST;
	struct inputs_text *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i < ti->cap; i++) {
		size_t j = ti->slots[i].hash & (cap - 1);

		if (!ti->slots[i].words)
			continue;
		while (slots[j].words)
			j = (j + 1) & (cap - 1);
		slots[j] = ti->slots[i];
	}
	free(ti->slots);
	ti->slots = slots;
	ti->cap = cap;
	return true;
}

/* The slot of W (NW words, hash H): the one holding them, or the empty one they would take. */
static struct inputs_text *inputs_slot(struct torch_inputs *ti, const uint64_t *w, size_t nw,
				       uint64_t h)
{
	size_t i = h & (ti->cap - 1);
	struct inputs_text *e;

	for (;; i = (i + 1) & (ti->cap - 1)) {
		e = &ti->slots[i];
		if (!e->words ||
		    (e->hash == h && e->nwords == nw && !memcmp(e->words, w, nw * sizeof(*w))))
			return e;
	}
}

/* The empty slot E, made the texts of W (NW words: the two counts, then the words they count). */
static bool inputs_fill(struct inputs_text *e, const uint64_t *w, size_t nw, uint64_t h)
{
	long ns = (long)w[0], nc = (long)w[1];
	const uint64_t *cw = w + 2 + (ns > 0 ? ns : 0);
	uint64_t *copy = malloc(nw * sizeof(*w));
	char buf[CONCRETE_MAX];
	size_t n;

	if (!copy)
		return false;
	memcpy(copy, w, nw * sizeof(*w));
	n = ns >= 0 ? shim_torch_shapes__text(w + 2, (size_t)ns, buf, SHAPES_MAX) : 0;
	e->shapes = n ? shim_str__intern(buf, n) : NULL;
	n = nc >= 0 ? shim_torch_concrete__text(cw, (size_t)nc, buf, sizeof(buf)) : 0;
	e->concrete = n ? shim_str__intern(buf, n) : NULL;
	e->words = copy;
	e->nwords = nw;
	e->hash = h;
	return true;
}

/* --torch-shapes: the inputs' shapes and concrete values (valid in the start callback only). */
static void read_inputs(struct torch_thread *tt, struct open_op *o, const void *rf,
			uint32_t session)
{
	const uint8_t *in = (const uint8_t *)rf + lib.layout->inputs;
	const void *data = *(void *const *)in;
	size_t n = *(const size_t *)(in + 8), nw;
	struct torch_inputs *ti = tt->inputs;
	struct inputs_text *e;
	uint32_t tid;
	long ns, nc;
	uint64_t *w, h;

	if (!ti && !(ti = tt->inputs = calloc(1, sizeof(*ti))))
		return;
	w = ti->words;
	ns = shim_torch_shapes__read(&lib, data, n, w + 2);
	nc = shim_torch_concrete__read(lib.layout, data, n, w + 2 + (ns > 0 ? ns : 0));
	w[0] = (uint64_t)ns;
	w[1] = (uint64_t)nc;
	nw = 2 + (size_t)(ns > 0 ? ns : 0) + (size_t)(nc > 0 ? nc : 0);
	h = words_hash(w, nw);
	if (!ti->cap && !inputs_grow(ti))
		return;
	e = inputs_slot(ti, w, nw, h);
	if (!e->words) {
		if (2 * (ti->used + 1) > ti->cap) {
			if (ti->cap >= INPUTS_MAX)
				inputs_clear(ti);
			else if (!inputs_grow(ti))
				return;
			e = inputs_slot(ti, w, nw, h);
		}
		if (!inputs_fill(e, w, nw, h))
			return;
		ti->used++;
	}
	tid = shim_thread__tid(tt->thread);
	o->shapes_id = shim_str__use(e->shapes, session, tid);
	o->concrete_id = shim_str__use(e->concrete, session, tid);
}

static void **on_start(void **ret, const void *rf)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed), session;
	struct torch_thread *tt;
	struct open_op *o;

	*ret = NULL;
	if (!(hot & SHIM_HOT_TORCH)) {
		if (hot & SHIM_HOT_RESTART)
			shim_core__restart();
		return ret;
	}
	session = atomic_load_explicit(&shim_session, memory_order_relaxed);
	if (!session || !(tt = thread_state(session)))
		return ret;
	if (!atomic_load_explicit(&checked, memory_order_relaxed) && !check_layout(rf))
		return ret;
	if (tt->depth < TORCH_MAX_DEPTH) {
		o = &tt->stack[tt->depth];
		o->rf = rf;
		o->shapes_id = o->concrete_id = 0;
		if (atomic_load_explicit(&shapes_on, memory_order_relaxed))
			read_inputs(tt, o, rf, session);
		o->ts = shim_clock__now(); /* last: what the shim did above is not the op's */
		if (SHIM_SEM(torch_op_stack) > 0 &&
		    ((const uint8_t *)rf)[lib.layout->scope] == BS_TORCH_SCOPE_USER_SCOPE)
			STACK_PROBE(o->ts, UINT64_MAX);
	}
	tt->depth++;
	return ret;
}

/* The op's name as a string of the shim's; schema names (kind 1) by address. */
static uint32_t name_id(struct torch_thread *tt, const void *rf, uint32_t session, uint32_t tid,
			const char **text)
{
	uint8_t kind = ((const uint8_t *)rf)[lib.layout->fn_index];
	const char *name = kind <= 1 ? lib.name(rf) : NULL; /* 0xff: valueless, name() throws */
	size_t slot;

	*text = name ? name : "";
	if (!name)
		return shim_str__use(shim_str__intern_c("[unknown]"), session, tid);
	if (kind != 1)
		return shim_str__use(shim_str__intern_c(name), session, tid);
	slot = ((uintptr_t)name >> 4) % NAME_CACHE;
	if (tt->names[slot].text != name) {
		tt->names[slot].s = shim_str__intern_c(name);
		tt->names[slot].text = name;
	}
	return shim_str__use(tt->names[slot].s, session, tid);
}

static uint16_t step_flags(uint8_t scope, const char *name)
{
	if (scope != BS_TORCH_SCOPE_USER_SCOPE)
		return 0;
	if (!strncmp(name, "Optimizer.step#", 15))
		return BS_TORCH_STEP;
	if (!strncmp(name, "ProfilerStep#", 13))
		return BS_TORCH_PROFILER_STEP;
	return 0;
}

static void emit(struct torch_thread *tt, const struct open_op *o, uint32_t depth, uint64_t now,
		 uint32_t session)
{
	const struct torch_layout *l = lib.layout;
	const uint8_t *p = o->rf;
	struct shim_thread *t = tt->thread;
	struct bs_torch_op *r;
	uint32_t tid, name;
	const char *text;
	uint16_t flags;
	uint8_t scope;

	if (!t)
		return;
	tid = shim_thread__tid(t);
	shim_thread__lock(t);
	/* Its STRING queued first: it goes before any batch this record is in. */
	name = name_id(tt, p, session, tid, &text);
	scope = p[l->scope];
	flags = step_flags(scope, text);
	/* Filled in place, every field (a batch is sent as it is). */
	r = shim_thread__reserve(t, session, sizeof(*r));
	if (r) {
		shim_hdr(&r->h, BS_REC_TORCH_OP, sizeof(*r), tid, o->ts);
		r->dur = now - o->ts;
		r->seq = *(const int64_t *)(p + l->seq);
		r->fwd_tid = *(const uint64_t *)(p + l->fwd_tid);
		r->torch_tid = *(const uint64_t *)(p + l->thread_id);
		r->name_id = name;
		r->shapes_id = o->shapes_id;
		r->scope = scope;
		r->depth = depth > 255 ? 255 : (uint8_t)depth;
		r->flags = flags;
		r->concrete_id = o->concrete_id;
		/* Before the record's batch can leave: its STACK_RAW goes first. */
		if (scope != BS_TORCH_SCOPE_USER_SCOPE && SHIM_SEM(torch_op_stack) > 0)
			STACK_PROBE(o->ts, r->dur);
		/* A step's end goes out at once: --capture-range=steps opens and closes on it. */
		if (flags)
			shim_thread__flush(t);
	}
	shim_thread__unlock(t);
}

static void on_end(const void *rf, void *ctx)
{
	uint64_t now = shim_clock__now();
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed), session, i;
	struct torch_thread *tt = me;

	(void)ctx;
	session = atomic_load_explicit(&shim_session, memory_order_relaxed);
	if (!(hot & SHIM_HOT_TORCH) || !tt || !session || tt->session != session || !tt->depth)
		return;
	if (tt->depth > TORCH_MAX_DEPTH) { /* one of those not kept */
		tt->depth--;
		shim_core__add_dropped(1);
		return;
	}
	/* The top, or below ops whose end ran elsewhere (async): those are let go. */
	for (i = tt->depth; i-- > 0 && tt->depth - i <= 8;) {
		if (tt->stack[i].rf != rf)
			continue;
		tt->depth = i;
		emit(tt, &tt->stack[i], i, now, session);
		return;
	}
}

/* ---- registering (the poller, ctl not held) ---- */

/* A note for the user (a STATUS record), once per session unless it changes. */
static void note(uint32_t session, int result, const char *text)
{
	if (!session || (noted_session == session && !strcmp(noted, text)))
		return;
	noted_session = session;
	snprintf(noted, sizeof(noted), "%s", text);
	shim_log("%s", text);
	shim_core__status(session, BS_SHIM_EV_TORCH, result, text, 0);
}

static void set_on(bool on)
{
	if (on)
		atomic_fetch_or(&shim_hot, SHIM_HOT_TORCH);
	else
		atomic_fetch_and(&shim_hot, ~(uint32_t)SHIM_HOT_TORCH);
	shim_core__set_state(on ? BS_SHIM_ST_TORCH_ON : 0, on ? 0 : BS_SHIM_ST_TORCH_ON);
}

static void unregister(void)
{
	set_on(false);
	lib.remove(handle);
	/* Ops still open call the end slot later: it returns at once from now on. */
	atomic_store(&slots->start, NULL);
	atomic_store(&slots->end, NULL);
	registered = false;
}

static void do_register(uint32_t session, bool shapes)
{
	const struct torch_layout *l = lib.layout;
	struct torch_rfcb cb;
	char text[PATH_MAX + 128];

	if (!tramp_build(lib_why, sizeof(lib_why))) {
		lib_err = -ENOEXEC;
		note(session, lib_err, lib_why);
		return;
	}
	memset(&cb, 0, sizeof(cb));
	cb.start = tramp + TRAMP_START;
	cb.end = tramp + TRAMP_END;
	cb.sampling_prob = 1.0;
	memset(cb.bytes, 1, l->num_scopes); /* every scope, as torch.profiler's default */
	cb.bytes[l->num_scopes] = shapes;   /* needs_inputs */
	atomic_store(&slots->start, shim_torch_empty ? NULL : (void *)on_start);
	atomic_store(&slots->end, shim_torch_empty ? NULL : (void *)on_end);
	atomic_store(&shapes_on, shapes);
	atomic_store(&checked, false);
	handle = lib.add_global(cb);
	registered = true;
	reg_shapes = shapes;
	set_on(true);
	snprintf(text, sizeof(text), "torch %s (%s): RecordFunction callback registered%s",
		 lib.version, lib.path, shapes ? ", with input shapes" : "");
	note(session, 0, text);
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* The loader's count of objects ever loaded: a new one may be libtorch_cpu. */
static unsigned long long loads(void)
{
	unsigned long long adds = 0;

	dl_iterate_phdr(count_adds, &adds);
	return adds;
}

/* Look for libtorch_cpu when something new was loaded since the last look. */
static void find(uint32_t session)
{
	unsigned long long adds = loads();

	if (lib_err != -ENOENT || adds == seen_adds)
		return;
	seen_adds = adds;
	lib_err = shim_torch_lib__find(&lib, lib_why, sizeof(lib_why));
	if (lib_err == -ENOENT)
		snprintf(lib_why, sizeof(lib_why),
			 "no libtorch_cpu in the process (yet): torch ops are recorded once it "
			 "is loaded");
	if (lib_err)
		note(session, lib_err, lib_why);
}

static void shim_torch__poll(void)
{
	uint32_t session = atomic_load(&shim_session);
	bool want = session && SHIM_SEM(batch) > 0 && SHIM_SEM(torch) > 0, shapes;

	if (atomic_load(&layout_bad)) {
		if (registered)
			unregister();
		note(session, -EPROTO, bad_why);
		return;
	}
	if (!want) {
		if (registered) {
			unregister();
			shim_clock__reset();
		}
		return;
	}
	shim_clock__poll();
	find(session);
	if (lib_err) {
		note(session, lib_err, lib_why); /* again for a new session */
		return;
	}
	shapes = SHIM_SEM(torch_shapes) > 0;
	if (shapes && !lib.layout->impl_sizes) {
		char text[256];

		snprintf(text, sizeof(text),
			 "torch %s: input shapes are not read (the TensorImpl layout of this "
			 "version is not verified): ops are recorded without them",
			 lib.version);
		note(session, -ENOTSUP, text);
		shapes = false;
	}
	if (registered && shapes != reg_shapes)
		unregister(); /* needs_inputs is the callback's own: registered again below */
	if (!registered)
		do_register(session, shapes);
	else if (!(atomic_load(&shim_hot) & SHIM_HOT_TORCH))
		set_on(true); /* a forked child, its poller started again */
}

/* No callback registered, none asked for: the poller need not look for one. */
static bool shim_torch__idle(void)
{
	return !registered && SHIM_SEM(torch) == 0;
}

static void torch_thread_gone(void *state)
{
	struct torch_thread *tt = state;

	if (me == state)
		me = NULL;
	if (tt && tt->inputs) {
		inputs_clear(tt->inputs);
		free(tt->inputs->slots);
		free(tt->inputs);
	}
	free(state);
}

/* A state change: the probes a tracer can watch (their notes are the control sites). */
static void torch_state(uint32_t st)
{
	STAP_PROBE1(bpfsight, torch, (uint64_t)st);
	STAP_PROBE1(bpfsight, torch_shapes, (uint64_t)st);
}

static void torch_init(void)
{
	module_slot = shim_module__slot(&shim_torch_module);
	shim_torch_lib__init();
}

const struct shim_module shim_torch_module = {
	.name = "torch",
	.init = torch_init,
	.poll = shim_torch__poll,
	.idle = shim_torch__idle,
	.state = torch_state,
	.thread_gone = torch_thread_gone,
	.fork_clear = BS_SHIM_ST_TORCH_ON,
};

/* The exit: torch may still run ops on other threads; they find the slots empty. */
__attribute__((destructor)) static void shim_torch_exit(void)
{
	if (slots) {
		atomic_store(&slots->start, NULL);
		atomic_store(&slots->end, NULL);
	}
}
