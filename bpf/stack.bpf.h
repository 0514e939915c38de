/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks read in BPF, for any program that wants the current thread's (cpu samples, events
 * with --stacks): its user stack unwound by frame pointers (stack_unwind, from the user
 * registers where the thread entered the kernel), and, in a Python
 * process described in py_procs (user space: user/stacks/stack_svc.c), the Python frames of the
 * thread (its thread state: the GIL's last holder when it holds the GIL, else found in the
 * interpreter's list of thread states by its native thread id): per frame the
 * code object, the instruction and the code object's identity (records.h, bs_py_frame).
 * Nothing is symbolized here. The words go into a per-CPU scratch buffer: addresses first,
 * the Python frames right after them.
 *
 * bpf_loop needs Linux 5.17: a program that includes this header keeps its stack code behind
 * a test of a const volatile (rodata) threshold against ~0 (off), which the verifier knows
 * and prunes, so with stacks off it loads where bpf_loop does not exist.
 */
#ifndef BPFSIGHT_STACK_BPF_H
#define BPFSIGHT_STACK_BPF_H

#include "common.bpf.h"

#define STACK_WORDS (BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES + 4 * BS_PY_MAX_FRAMES)
#define STACK_HDR   128 /* bytes of a frame (and of a code object) read in one copy */
/*
 * 3.11+ frames lie one after another in the thread's data stack, a caller below its callee:
 * one copy of the STACK_WIN bytes that end at a frame's header holds the frames it called
 * from too, so a walk pays one read per window, not one per frame.
 */
#define STACK_WIN  8192
#define STACK_PAGE 4096
/* Bytes of a thread state read in one copy: its next, its frame and its tid lie there. */
#define STACK_TS 256

/*
 * What the last walk of this CPU left for the next (a CPU's walks do not overlap: the scratch
 * buffer holds one stack):
 * - floor: where the first window of thread TID began (its data stack's first frame,
 *   usually). Its next first window begins there, so it copies the frames' bytes, not 8 KiB,
 *   and does not start below the data stack's first chunk (a fault, ~600 ns on the benchmark
 *   VM, then a second copy from the frame's page);
 * - ids[k] (n of them): the code object the k-th frame of the walk ran and its identity, for
 *   process PID (registration GEN) while it has freed no code object since (FREES: its
 *   bs_py_cfg.code_frees, counted by the probe on code_dealloc before the memory can be
 *   reused): no object freed, no address reused, so the same address is the same object. A
 *   stack taken again where the last one was then makes no py_codes lookup (~30 ns each);
 * - tstate: the thread state of thread TS_TID (started at TS_START: a tid is reused only by
 *   another thread) of process TS_PID (registration TS_GEN), which its next stack reads
 *   first (stack_cached_tstate), not the interpreter's list of thread states.
 */
struct stack_cache {
	__u32 tid;
	__u32 pid, gen;
	__u32 n;
	__u64 frees;
	__u64 floor;
	__u64 tstate;
	__u64 ts_start;
	__u32 ts_tid, ts_pid;
	__u32 ts_gen, ts_pad;
};

struct stack_id_ent {
	__u64 code;
	struct bs_py_code_id id;
};

/*
 * The native walk's state (stack_unwind), in the scratch buffer like stack_py_walk's. Its
 * frames are read from copies of whole pages of the user stack (s->win): one copy for the
 * frames of a page, where the kernel's own walk (bpf_get_stack) reads every word alone and
 * follows the last frame pointer of a module without frame pointers wherever it points, to
 * a fault (~600 ns on the benchmark VM) as often as not.
 */
struct stack_fp_walk {
	__u64 fp;      /* the next frame: the caller's frame pointer, then a return address */
	__u64 hi;      /* frames lie above the stack pointer and below hi */
	__u64 win_lo;  /* s->win holds the user memory from win_lo on, win_len bytes */
	__u32 win_len; /* 0: none yet */
	__u32 n;       /* words written to s->w */
	__u32 max;     /* words wanted */
	__u32 pad;
	__u64 tramp; /* the uretprobe trampoline, while calls with a uretprobe are pending */
	__u64 ri;    /* the pending return_instance of the next trampoline met (kernel memory) */
};

/*
 * A Python walk's state. It lives in the per-CPU scratch buffer, not on the BPF stack: the
 * verifier tracks no values in map memory, so the frame callback's state is the same at every
 * round of bpf_loop (two pointers) and is checked once or twice, not once per frame count and
 * branch taken (Linux 6.7+ checks a callback as if called any number of times).
 */
struct stack_py_walk {
	__u64 fr;
	__u32 n;       /* words of addresses before the frames */
	__u32 k;       /* frames written */
	__u32 max;     /* frames wanted (0: BS_PY_MAX_FRAMES) */
	__u32 win_len; /* bytes of s->win copied from win_lo (0: none yet) */
	__u64 win_lo;
	__u64 last_code; /* the previous frame's code object and its two identity words */
	__u64 last_name, last_file;
	__u32 pid;
	__u32 own;   /* the current thread's frames: its code objects cannot be freed meanwhile */
	__u32 alone; /* the last frame was read alone, outside the window */
	__u32 first; /* the window is the walk's first */
	__u64 floor; /* where the first window may begin (0: STACK_WIN before its end) */
	__u64 low;   /* the lowest frame the first window held */
	__u32 ids;   /* 1: s->ids holds this walk's identities (its own frames, code_cache) */
	__u32 pad;
};

/* bpf_loop's argument for a Python walk: the process's layout and the scratch buffer. */
struct stack_py_arg {
	const struct bs_py_cfg *c;
	struct stack_scratch *s;
};

struct stack_scratch {
	struct bs_hdr h; /* the raw record's header, then its 16 bytes of counts */
	__u32 nips, flags, npy, type;
	__u64 w[STACK_WORDS];
	/* Not sent: a frame's and a code object's first bytes, read in one copy each. */
	__u8 fr[STACK_HDR], co[STACK_HDR];
	__u8 win[STACK_WIN]; /* user memory from win_lo on: data-stack frames (3.11+) */
	__u8 tsb[STACK_TS];  /* a thread state's first bytes */
	struct stack_cache cache;
	struct stack_id_ent ids[BS_PY_MAX_FRAMES]; /* stack_cache's */
	struct stack_py_walk walk;
	struct stack_fp_walk fpw;
	__u64 woken; /* when this CPU last woke the recorder for a stack */
	__u32 busy;  /* a program of this CPU is building a stack in here (stack_scratch_take) */
	__u32 busy_pad;
};

#define STACK_WAKE_NS 5000000 /* a stack wakes the recorder at most every 5 ms per CPU */

/*
 * The flags of a stack's output: its Python frames are named from the process's memory,
 * which a short process may not keep for long, so a stack wakes the recorder, but not at
 * every event (a wakeup costs ~15 us of the traced thread's time here): at most every
 * STACK_WAKE_NS on a CPU, else as any record.
 */
static __always_inline __u64 stack_wakeup(struct stack_scratch *s)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - s->woken < STACK_WAKE_NS)
		return bs_wakeup_flags();
	s->woken = now;
	return BPF_RB_FORCE_WAKEUP;
}

/* A stack is bigger than the BPF stack allows: built here, copied out whole. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

/* Python processes: pid -> how to read their frames. One map, shared by every object. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bs_py_cfg);
} py_procs SEC(".maps");

/* Code objects' identities while they live (records.h, bs_py_code_key). Shared. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BS_PY_CODES);
	__type(key, struct bs_py_code_key);
	__type(value, struct bs_py_code_id);
} py_codes SEC(".maps");

/*
 * The scratch buffer of this CPU for one stack, or NULL. A program that interrupts another
 * (a cpu sample, from the timer interrupt, in the middle of a system call's tp_btf program
 * on the same CPU: the kernel keeps these apart only from kprobe and uprobe programs) would
 * overwrite the stack being built there: it takes none instead, and the loss is counted
 * (BS_LOSS_STACK). stack_scratch_put gives the buffer back. Only an interrupt can come
 * between the test and the set, and it gives the buffer back before it returns.
 */
static __always_inline struct stack_scratch *stack_scratch_take(void)
{
	__u32 zero = 0;
	struct stack_scratch *s = bpf_map_lookup_elem(&stack_scratch, &zero);

	if (!s)
		return NULL;
	if (*(volatile __u32 *)&s->busy) {
		bs_count_loss(BS_LOSS_STACK);
		return NULL;
	}
	*(volatile __u32 *)&s->busy = 1;
	asm volatile("" ::: "memory");
	return s;
}

static __always_inline void stack_scratch_put(struct stack_scratch *s)
{
	asm volatile("" ::: "memory");
	*(volatile __u32 *)&s->busy = 0;
}

/* S's first SIZE bytes sent as a record of REC_TYPE of thread TID of PID at TS. */
static __always_inline void stack_send(struct stack_scratch *s, __u64 size, __u16 rec_type,
				       __u32 pid, __u32 tid, __u64 ts, __u64 flags)
{
	s->h.type = rec_type;
	s->h.size = size;
	s->h.cpu = bpf_get_smp_processor_id();
	s->h.pid = pid;
	s->h.tid = tid;
	s->h.ts = ts;
	if (bpf_ringbuf_output(&events, s, size, flags))
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
}

static __always_inline __u64 stack_read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* The u64 at byte OFF of BUF of SIZE bytes (a copy of user memory), 0 past its end. */
static __always_inline __u64 buf_u64(const __u8 *buf, __u32 off, __u32 size)
{
	if (off > size - 8)
		return 0;
	return *(const __u64 *)(buf + off);
}

/*
 * Thread state TS's first STACK_TS bytes into s->tsb, in one copy (every version's
 * PyThreadState is larger); its tid, 0 when unreadable.
 */
static __always_inline __u32 stack_ts_load(const struct bs_py_cfg *c, struct stack_scratch *s,
					   __u64 ts)
{
	__u32 ptid = 0;
	__u64 t;

	if (bpf_probe_read_user(s->tsb, STACK_TS, (const void *)ts))
		return 0;
	t = buf_u64(s->tsb, c->tid_off, STACK_TS);
	if (c->pthread_tid_off) {
		bpf_probe_read_user(&ptid, sizeof(ptid), (const void *)(t + c->pthread_tid_off));
		t = ptid;
	}
	return t;
}

/* The PyThreadState of TID (then in s->tsb) when it holds its interpreter's GIL, else 0. */
static __always_inline __u64 stack_gil_tstate(const struct bs_py_cfg *c, struct stack_scratch *s,
					      __u32 tid)
{
	__u64 g[2] = {}, ts;
	__s32 locked = 0;

	if (c->locked == c->holder + 8) {
		/* last_holder, then locked, in every version's _gil_runtime_state: one copy. */
		if (bpf_probe_read_user(g, sizeof(g), (const void *)c->holder))
			return 0;
		ts = g[0];
		locked = (__s32)g[1];
	} else {
		bpf_probe_read_user(&locked, sizeof(locked), (const void *)c->locked);
		if (locked != 1)
			return 0;
		ts = stack_read_u64(c->holder);
	}
	if (locked != 1 || !ts)
		return 0;
	return stack_ts_load(c, s, ts) == tid ? ts : 0;
}

struct stack_ts_find {
	const struct bs_py_cfg *c;
	struct stack_scratch *s;
	__u64 ts; /* the thread state looked at, then the one found (0: none) */
	__u32 tid;
	__u32 found;
};

/* One thread state of the interpreter's list (bpf_loop's body): one copy each. */
static long stack_ts_next(__u32 i, void *arg)
{
	struct stack_ts_find *f = arg;
	__u32 t;

	if (!f->ts)
		return 1;
	t = stack_ts_load(f->c, f->s, f->ts);
	if (!t)
		return 1;
	if (t == f->tid) {
		f->found = 1;
		return 1;
	}
	f->ts = buf_u64(f->s->tsb, 8, STACK_TS); /* PyThreadState.next, in every version */
	return 0;
}

/*
 * The PyThreadState of TID (then in s->tsb) from the interpreter's list: for a thread that
 * released the GIL (I/O, a C extension computing without it), whose Python frames still say
 * where it is.
 */
static __always_inline __u64 stack_list_tstate(const struct bs_py_cfg *c, struct stack_scratch *s,
					       __u32 tid)
{
	struct stack_ts_find f = { .c = c, .s = s, .tid = tid };

	if (!c->interp || !c->threads_head)
		return 0;
	f.ts = stack_read_u64(c->interp + c->threads_head);
	bpf_loop(256, stack_ts_next, &f, 0);
	return f.found ? f.ts : 0;
}

/*
 * The current frame of the thread state in s->tsb (through 3.11's and 3.12's cframe); 0:
 * none. The cframe is a local of the eval loop's C frame, on the thread's own stack: in the
 * page the native walk copied last, mostly (at a ctypes call, at a sample in Python code),
 * where it is read without a copy of its own.
 */
static __always_inline __u64 stack_first_frame(const struct bs_py_cfg *c, struct stack_scratch *s)
{
	__u64 fr = buf_u64(s->tsb, c->ts_frame, STACK_TS), at, off;
	struct stack_fp_walk *u = &s->fpw;

	if (c->cframe_frame == BS_PY_NONE || !fr)
		return fr;
	at = fr + c->cframe_frame;
	off = at - u->win_lo;
	if (u->win_len && at >= u->win_lo && off <= STACK_PAGE - 8 && off + 8 <= u->win_len)
		return *(const __u64 *)(s->win + off);
	return stack_read_u64(at);
}

/*
 * The thread state this CPU's last walk found for the current thread TID of PID, started at
 * START (then in s->tsb), and its current frame into *FR, when the state still names the
 * thread and has a frame; else 0. For a thread without the GIL (a C call, I/O) this is one
 * copy where the interpreter's list costs two and one more per thread state before the
 * thread's. A thread state is freed only while its thread runs no Python code: a freed one
 * that still names the thread has no frame, and then the list is walked (a C library's
 * thread calling Python through PyGILState_Ensure gets a new thread state each time).
 */
static __always_inline __u64 stack_cached_tstate(const struct bs_py_cfg *c, struct stack_scratch *s,
						 __u32 pid, __u32 tid, __u64 start, __u64 *fr)
{
	struct stack_cache *ca = &s->cache;

	*fr = 0;
	if (ca->ts_tid != tid || ca->ts_pid != pid || ca->ts_gen != c->code_gen ||
	    ca->ts_start != start || !ca->tstate)
		return 0;
	if (stack_ts_load(c, s, ca->tstate) != tid)
		return 0;
	*fr = stack_first_frame(c, s);
	return *fr ? ca->tstate : 0;
}

/*
 * Whether the thread state in s->tsb says its thread holds the GIL (3.12+: bs_py_cfg.ts_gil;
 * not asked before).
 */
static __always_inline int stack_ts_holds_gil(const struct bs_py_cfg *c, struct stack_scratch *s)
{
	__u32 off = c->ts_gil;

	if (off > STACK_TS - 4)
		return 0;
	return (*(const __u32 *)(s->tsb + off) & c->ts_gil_mask) != 0;
}

/*
 * Thread state TS of the current thread TID of PID (started at START): the next stack of TID
 * on this CPU reads it first.
 */
static __always_inline void stack_keep_tstate(const struct bs_py_cfg *c, struct stack_scratch *s,
					      __u32 pid, __u32 tid, __u64 start, __u64 ts)
{
	struct stack_cache *ca = &s->cache;

	ca->tstate = ts;
	ca->ts_tid = tid;
	ca->ts_pid = pid;
	ca->ts_gen = c->code_gen;
	ca->ts_start = start;
}

/*
 * The u64 at byte OFF of a copied header (a frame's, a code object's): the offsets come from
 * py_procs, so each read is bounded for the verifier (one out of range reads 0).
 */
static __always_inline __u64 hdr_u64(const __u8 *h, __u32 off)
{
	if (off > STACK_HDR - 8)
		return 0;
	return *(const __u64 *)(h + off);
}

static __always_inline __u8 hdr_u8(const __u8 *h, __u32 off)
{
	return off < STACK_HDR ? h[off] : 0;
}

/*
 * The first STACK_HDR bytes of frame FR from P's window, refilled with the bytes that end at
 * FR's header (up to STACK_WIN, from the floor for the first window) when FR lies outside
 * it (a caller's frame is below its callee's in the data stack). A window that starts in
 * unmapped memory (below the first chunk) is copied again from FR's own page. NULL when FR
 * is to be read alone: a frame above the window right after frames in it (the eval loop's
 * entry frame on the C stack (3.12+), a generator's frame in its object: the frames below
 * are in the window still), or when no copy can be had.
 */
static __always_inline __u8 *stack_win_frame(struct stack_scratch *s, __u64 fr)
{
	struct stack_py_walk *p = &s->walk;
	__u64 off = fr - p->win_lo, lo, len;

	if (p->win_len && fr >= p->win_lo && off + STACK_HDR <= p->win_len &&
	    off <= STACK_WIN - STACK_HDR) {
		if (p->first && fr < p->low)
			p->low = fr;
		return s->win + off;
	}
	if (p->win_len && !p->alone && fr > p->win_lo)
		return NULL;
	p->first = !p->win_len && !p->alone;
	lo = fr + STACK_HDR - STACK_WIN;
	len = STACK_WIN;
	if (p->first && p->floor > lo && p->floor <= fr) {
		lo = p->floor;
		len = fr - lo + STACK_HDR;
	}
	if (len > STACK_WIN || bpf_probe_read_user(s->win, len, (const void *)lo)) {
		lo = fr & ~(__u64)(STACK_PAGE - 1);
		len = (__u32)(fr - lo) + STACK_HDR;
		if (len > STACK_WIN || bpf_probe_read_user(s->win, len, (const void *)lo)) {
			p->win_len = 0;
			p->first = 0;
			return NULL;
		}
	}
	p->win_lo = lo;
	p->win_len = len;
	if (p->first)
		p->low = fr;
	off = fr - lo;
	if (off > STACK_WIN - STACK_HDR)
		return NULL;
	return s->win + off;
}

/*
 * The first bytes of frame FR: from the window when frames live in the data stack (3.11+),
 * else (frame objects, <= 3.10) in one copy of their own.
 */
static __always_inline __u8 *stack_frame_hdr(const struct bs_py_cfg *c, struct stack_scratch *s,
					     __u64 fr)
{
	__u8 *h = s->fr;

	if (c->fr_entry != BS_PY_ALL) {
		h = stack_win_frame(s, fr);
		s->walk.alone = !h;
		if (h)
			return h;
		h = s->fr;
	}
	/* A frame may end short of STACK_HDR bytes at a page's end: then read the least. */
	if (bpf_probe_read_user(h, STACK_HDR, (const void *)fr) &&
	    bpf_probe_read_user(h, 80, (const void *)fr))
		return NULL;
	return h;
}

/*
 * Code object CODE's identity into ID[0] (name) and ID[1] (file): from py_codes when a
 * walk of this process met it before (the entry goes when the object is freed), else read
 * in one copy from co_firstlineno to co_name, and kept when the thread's own frame holds
 * the object (another thread's frames may be freed under the walk).
 */
static __always_inline void stack_code_id(const struct bs_py_cfg *c, struct stack_scratch *s,
					  __u64 code, __u64 *id)
{
	struct bs_py_code_key key = { .pid = s->walk.pid, .gen = c->code_gen, .code = code };
	struct bs_py_code_id *hit, got;
	__u8 *co = s->co;
	__u32 base;

	if (c->code_cache) {
		hit = bpf_map_lookup_elem(&py_codes, &key);
		if (hit) {
			id[0] = hit->name;
			id[1] = hit->file;
			return;
		}
	}
	/* The code object from its first line to its name (128 bytes, 8-aligned start). */
	base = c->co_firstlineno & ~7u;
	if (bpf_probe_read_user(co, STACK_HDR, (const void *)(code + base)))
		return;
	{
		__u64 name = hdr_u64(co, c->co_name - base);
		__u64 file = hdr_u64(co, c->co_filename - base);
		__u32 first = (__u32)(hdr_u64(co, 0) >> (8 * (c->co_firstlineno & 7)));

		got.name = BS_PY_NAME_ID(name, name ? stack_read_u64(name + BS_PY_STR_HASH) : 0);
		got.file = BS_PY_FILE_ID(file, first);
	}
	id[0] = got.name;
	id[1] = got.file;
	if (c->code_cache && s->walk.own && got.name)
		bpf_map_update_elem(&py_codes, &key, &got, BPF_ANY);
}

/*
 * One frame (bpf_loop's body; its state is in the scratch buffer, see stack_py_walk). A
 * user-memory read costs ~100-200 ns on the benchmark VM: frames come from the window (or,
 * <= 3.10, one copy of their first STACK_HDR bytes: code, previous, instruction, owner,
 * is_entry all lie there), and the code object's identity in one copy from co_firstlineno
 * to co_name, unless the frame runs the previous frame's code (recursion: the same live
 * object, read once).
 */
static long stack_py_frame(__u32 i, void *arg)
{
	struct stack_py_arg *a = arg;
	const struct bs_py_cfg *c = a->c;
	struct stack_scratch *s = a->s;
	struct stack_py_walk *p = &s->walk;
	__u64 fr = p->fr, code, *w = s->w, id[2] = {};
	__u32 k = p->k, kept = 0;
	__u64 at = (__u64)p->n + 4 * (__u64)k;
	struct stack_id_ent *e;
	__u8 *h;

	if (!fr || k >= BS_PY_MAX_FRAMES || (p->max && k >= p->max))
		return 1;
	h = stack_frame_hdr(c, s, fr);
	if (!h)
		return 1;
	p->fr = hdr_u64(h, c->fr_prev);
	if (c->owner_cstack != BS_PY_NONE && hdr_u8(h, c->fr_owner) == c->owner_cstack) {
		/* The eval loop's entry frame: the frame before it was the first it ran. */
		if (k && at >= 1 && at <= STACK_WORDS)
			w[at - 1] |= BS_PY_FRAME_ENTRY;
		return 0;
	}
	if (at >= STACK_WORDS - 3)
		return 1;
	/* 3.14's f_executable is a _PyStackRef: a pointer with tag bits (objects are 8-aligned). */
	code = hdr_u64(h, c->fr_code) & ~7ull;
	w[at] = code;
	w[at + 1] = hdr_u64(h, c->fr_instr);
	e = &s->ids[k & (BS_PY_MAX_FRAMES - 1)];
	if (!code) {
	} else if (code == p->last_code) {
		id[0] = p->last_name;
		id[1] = p->last_file;
	} else if (p->ids && k < s->cache.n && e->code == code) {
		/* The last walk's frame at this depth ran it, and no code object was freed since:
		 * its entry stays as it is. */
		id[0] = e->id.name;
		id[1] = e->id.file;
		kept = 1;
	} else {
		stack_code_id(c, s, code, id);
	}
	if (code != p->last_code) {
		p->last_code = id[0] ? code : 0;
		p->last_name = id[0];
		p->last_file = id[1];
	}
	if (p->ids && !kept) {
		e->code = id[0] ? code : 0;
		e->id.name = id[0];
		e->id.file = id[1];
		if (k >= s->cache.n)
			s->cache.n = k + 1;
	}
	if (c->fr_entry == BS_PY_ALL || (c->fr_entry != BS_PY_NONE && hdr_u8(h, c->fr_entry)))
		id[1] |= BS_PY_FRAME_ENTRY;
	w[at + 2] = id[0];
	w[at + 3] = id[1];
	p->k++;
	return 0;
}

/*
 * A frame pointer lies at most this far above the stack pointer: a value beyond is not one
 * (a function without frame pointers left something else in rbp), and is not followed. The
 * default stack of a thread, and of the main thread, is 8 MiB.
 */
#define STACK_FP_SPAN (16ull << 20)

/*
 * The LEN (<= 64) bytes of user memory at AT, from s->win, refilled with AT's page when they
 * lie outside it (or with those bytes alone when they cross the page's end); NULL when
 * unreadable. Pages of the stack above its pointer have been written: they are present.
 */
static __always_inline const __u8 *stack_page_bytes(struct stack_scratch *s, __u64 at, __u32 len)
{
	struct stack_fp_walk *u = &s->fpw;
	__u64 off = at - u->win_lo, lo;
	__u32 n = STACK_PAGE;

	if (!u->win_len || at < u->win_lo || off + len > u->win_len) {
		lo = at & ~(__u64)(STACK_PAGE - 1);
		if (at + len > lo + STACK_PAGE) {
			lo = at;
			n = 64;
		}
		if (bpf_probe_read_user(s->win, n, (const void *)lo)) {
			u->win_len = 0;
			return NULL;
		}
		u->win_lo = lo;
		u->win_len = n;
		off = at - lo;
	}
	if (off > STACK_PAGE - len)
		return NULL;
	return s->win + off;
}

/*
 * A pending uretprobe put its trampoline where the probed function returns to: the word
 * RET, when it is the trampoline, stands for the return address the next pending
 * return_instance keeps (the kernel's own walk does the same since 6.11; before it, a
 * stack under a pending uretprobe was cut there).
 */
static __always_inline __u64 stack_fp_ret(struct stack_fp_walk *u, __u64 ret)
{
	struct return_instance *ri = (struct return_instance *)u->ri;

	if (ret != u->tramp || !ri)
		return ret;
	u->ri = (__u64)BPF_CORE_READ(ri, next);
	return BPF_CORE_READ(ri, orig_ret_vaddr);
}

/*
 * One frame of the native walk (bpf_loop's body; ARG points to the scratch buffer: bpf_loop
 * takes a pointer to the BPF stack): its return address, then its caller's frame.
 */
static long stack_fp_frame(__u32 i, void *arg)
{
	struct stack_scratch *s = *(struct stack_scratch **)arg;
	struct stack_fp_walk *u = &s->fpw;
	__u64 fp = u->fp, next, ret;
	const __u8 *b;
	__u32 n = u->n;

	if (n >= u->max || n >= STACK_WORDS || (fp & 7) || fp >= u->hi)
		return 1;
	b = stack_page_bytes(s, fp, 16);
	if (!b)
		return 1;
	next = *(const __u64 *)b;
	ret = *(const __u64 *)(b + 8);
	if (!ret)
		return 1;
	s->w[n] = stack_fp_ret(u, ret);
	u->n = n + 1;
	/* A caller's frame lies above its callee's: anything else ends the chain. */
	if (next <= fp)
		return 1;
	u->fp = next;
	return 0;
}

/*
 * The current thread's user stack into S's words, innermost first (its instruction, then the
 * return addresses a frame-pointer walk finds); how many words. With TOP, the
 * BS_STACK_TOP_WORDS words on top of the user stack go first (zeros when unreadable) and
 * BS_CPU_LEAF is set: the recorder finds among them the return addresses the walk misses.
 * The registers are those saved where the thread entered the kernel (a uprobe's trap, a
 * system call, the interrupt of a sample): the user's, whatever program runs this.
 */
static __always_inline long stack_unwind(struct stack_scratch *s, int top)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct stack_fp_walk *u = &s->fpw;
	struct uprobe_task *ut;
	struct xol_area *xol;
	struct pt_regs *r;
	const __u8 *b;
	__u32 n = 0;
	__u64 sp;

	/* Nothing of an earlier stack's page is taken for this one's (stack_first_frame). */
	__builtin_memset(u, 0, sizeof(*u));
	/* No user context: a kernel thread, an io_uring worker (its registers are not a user's:
	 * the kernel's own walker skips both). PF_KTHREAD, PF_IO_WORKER: stable since 5.12. */
	if (!t->mm || (t->flags & (0x00200000 | 0x00000010)))
		return 0;
	r = (struct pt_regs *)bpf_task_pt_regs(t);
	sp = r->sp;
	u->hi = sp + STACK_FP_SPAN;
	if (top) {
		s->flags |= BS_CPU_LEAF;
		b = stack_page_bytes(s, sp, BS_STACK_TOP_WORDS * 8);
		if (b)
			__builtin_memcpy(s->w, b, BS_STACK_TOP_WORDS * 8);
		else
			__builtin_memset(s->w, 0, BS_STACK_TOP_WORDS * 8);
		n = BS_STACK_TOP_WORDS;
	}
	ut = t->utask;
	if (ut && ut->return_instances) {
		u->ri = (__u64)ut->return_instances;
		xol = t->mm->uprobes_state.xol_area;
		u->tramp = xol ? xol->vaddr : 0;
	}
	/* n is BS_STACK_TOP_WORDS or 0: the instruction, then the walk's return addresses. */
	s->w[n & BS_STACK_TOP_WORDS] = stack_fp_ret(u, r->ip);
	u->n = n + 1;
	u->max = n + BS_STACK_MAX_FRAMES;
	u->fp = r->bp;
	if (u->fp >= sp)
		bpf_loop(BS_STACK_MAX_FRAMES, stack_fp_frame, &s, 0);
	n = u->n;
	return n > BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES ? 0 : n;
}

/*
 * The current thread's stack into S: its user addresses, then its Python frames when PID is
 * a Python process (read from the thread's state: the GIL's holder or one of the
 * interpreter's list). Sets s->nips, s->npy and BS_CPU_PYTHON/GIL/LEAF in s->flags (other
 * flags are the caller's); returns the record's size in bytes. TOP: as stack_unwind's.
 */
static __always_inline __u32 stack_read(struct stack_scratch *s, __u32 pid, __u32 tid, int top)
{
	struct stack_py_walk *p = &s->walk;
	struct stack_py_arg a = { .s = s };
	const struct bs_py_cfg *c;
	__u64 ts, fr = 0, size, npy = 0;
	long n;

	n = stack_unwind(s, top);
	s->nips = n;
	s->npy = 0;
	c = bpf_map_lookup_elem(&py_procs, &pid);
	if (c) {
		/* The thread's start: a tid is reused only by another thread. */
		__u64 start = bpf_get_current_task_btf()->start_time;

		s->flags |= BS_CPU_PYTHON;
		if (c->ts_gil == BS_PY_NONE) {
			/* <= 3.11: only the GIL's state says whether the thread holds it. */
			ts = stack_gil_tstate(c, s, tid);
			if (ts) {
				s->flags |= BS_CPU_GIL;
				fr = stack_first_frame(c, s);
			} else {
				ts = stack_cached_tstate(c, s, pid, tid, start, &fr);
			}
		} else {
			/* 3.12+: the thread state says it too: one copy when it is known. */
			ts = stack_cached_tstate(c, s, pid, tid, start, &fr);
			if (!ts) {
				ts = stack_gil_tstate(c, s, tid);
				fr = ts ? stack_first_frame(c, s) : 0;
			}
		}
		if (!ts) {
			ts = stack_list_tstate(c, s, tid);
			fr = ts ? stack_first_frame(c, s) : 0;
		}
		/* s->tsb holds the thread state found. */
		if (ts && c->ts_gil != BS_PY_NONE && stack_ts_holds_gil(c, s))
			s->flags |= BS_CPU_GIL;
		if (ts) {
			struct stack_cache *ca = &s->cache;

			stack_keep_tstate(c, s, pid, tid, start, ts);
			__builtin_memset(p, 0, sizeof(*p));
			a.c = c;
			p->n = n;
			p->pid = pid;
			p->own = 1;
			if (ca->tid == tid)
				p->floor = ca->floor;
			if (c->code_cache) {
				/* Read before the frames: a code object freed after it changes it. */
				__u64 frees = *(volatile const __u64 *)&c->code_frees;

				if (ca->pid != pid || ca->gen != c->code_gen ||
				    ca->frees != frees) {
					ca->pid = pid;
					ca->gen = c->code_gen;
					ca->frees = frees;
					ca->n = 0;
				}
				p->ids = 1;
			}
			p->fr = fr;
			/* Entry frames are skipped, not counted: room for a few of them. */
			bpf_loop(BS_PY_MAX_FRAMES + 32, stack_py_frame, &a, 0);
			npy = p->k > BS_PY_MAX_FRAMES ? BS_PY_MAX_FRAMES : p->k;
			s->npy = npy;
			ca->tid = tid;
			ca->floor = p->low;
		}
	}
	/* From the locals, whose bounds the verifier knows (n <= 136, npy <= 64). */
	size = sizeof(s->h) + 16 + ((__u64)n + 4 * npy) * 8;
	return size > sizeof(*s) ? sizeof(*s) : size;
}

/*
 * The innermost MAX Python frames of thread state TSTATE (another thread of the process: the
 * GIL's holder) into S's words from 0 on, with PID's layout; returns how many.
 */
static __always_inline __u32 stack_read_python(__u32 pid, __u64 tstate, struct stack_scratch *s,
					       __u32 max)
{
	const struct bs_py_cfg *c = bpf_map_lookup_elem(&py_procs, &pid);
	struct stack_py_arg a = { .c = c, .s = s };
	struct stack_py_walk *p = &s->walk;
	__u32 k;

	if (!c || !tstate)
		return 0;
	__builtin_memset(p, 0, sizeof(*p));
	p->max = max;
	p->pid = pid;
	p->fr = stack_read_u64(tstate + c->ts_frame);
	if (c->cframe_frame != BS_PY_NONE)
		p->fr = p->fr ? stack_read_u64(p->fr + c->cframe_frame) : 0;
	bpf_loop(2 * max + 2, stack_py_frame, &a, 0);
	k = p->k;
	return k > max ? max : k;
}

/*
 * S's first NPY Python frames (read by stack_read_python, or copied back there) as the
 * STACK_RAW of the event of TYPE of thread TID of PID at TS: no native frames (they would
 * be another thread's registers).
 */
static __always_inline void stack_emit_python(struct stack_scratch *s, __u32 npy, __u16 type,
					      __u32 pid, __u32 tid, __u64 ts)
{
	__u64 size;

	if (!npy)
		return;
	if (npy > BS_PY_MAX_FRAMES)
		npy = BS_PY_MAX_FRAMES;
	size = sizeof(s->h) + 16 + 4 * (__u64)npy * 8;
	if (size > sizeof(*s))
		size = sizeof(*s);
	s->nips = 0;
	s->npy = npy;
	s->flags = BS_CPU_PYTHON;
	s->type = type;
	stack_send(s, size, BS_REC_STACK_RAW, pid, tid, ts, stack_wakeup(s));
}

/*
 * Emit the current thread's stack for the event of TYPE it is about to write at TS. TOP: the
 * words on top of the user stack too (see stack_unwind): where a system call was made from
 * a function without a frame of its own (glibc's wrappers).
 */
static __always_inline void stack_emit(__u16 type, __u32 pid, __u32 tid, __u64 ts, int top)
{
	struct stack_scratch *s = stack_scratch_take();
	__u32 size;

	if (!s)
		return;
	s->flags = 0;
	size = stack_read(s, pid, tid, top);
	s->type = type;
	stack_send(s, size, BS_REC_STACK_RAW, pid, tid, ts, stack_wakeup(s));
	stack_scratch_put(s);
}

#endif /* BPFSIGHT_STACK_BPF_H */
