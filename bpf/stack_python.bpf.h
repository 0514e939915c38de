/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Python frames of a thread of a process described in py_procs (user space:
 * user/stacks/stack_svc.c), read in BPF: the thread's state (which one: stack_read), then
 * its _PyInterpreterFrame chain (frame objects up to 3.10), per frame the code object, its
 * instruction and an identity of the code object (records.h, bs_py_frame). Nothing is named
 * here: the recorder does it (user/python/py_stack.c) while the process lives.
 */
#ifndef BPFSIGHT_STACK_PYTHON_BPF_H
#define BPFSIGHT_STACK_PYTHON_BPF_H

#include "stack_scratch.bpf.h"

/*
 * What names a thread in the thread state in s->tsb, 0 when nothing does: native_thread_id
 * (3.11+), or thread_id (3.8-3.10), the pthread_t: glibc's struct pthread, the thread's own
 * TCB, which its fs base points at.
 */
static __always_inline __u64 stack_ts_key(const struct bs_py_cfg *c, struct stack_scratch *s)
{
	return buf_u64(s->tsb, c->tid_off, STACK_TS);
}

/*
 * The same for the current thread TID: TID, or (3.8-3.10) its fs base as the kernel keeps it,
 * which saves reading the tid out of each struct pthread (one copy per thread state).
 */
static __always_inline __u64 stack_self_key(const struct bs_py_cfg *c, __u32 tid)
{
	if (!c->pthread_tid_off)
		return tid;
	return BPF_CORE_READ(bpf_get_current_task_btf(), thread.fsbase);
}

/*
 * Thread state TS's first STACK_TS bytes into s->tsb, in one copy (every version's
 * PyThreadState is larger); what names its thread (stack_ts_key), 0 when unreadable.
 */
static __always_inline __u64 stack_ts_load(const struct bs_py_cfg *c, struct stack_scratch *s,
					   __u64 ts)
{
	if (bpf_probe_read_user(s->tsb, STACK_TS, (const void *)ts))
		return 0;
	return stack_ts_key(c, s);
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
	return stack_ts_load(c, s, ts) == stack_self_key(c, tid) ? ts : 0;
}

struct stack_ts_find {
	const struct bs_py_cfg *c;
	struct stack_scratch *s;
	__u64 ts;  /* the thread state looked at, then the one found (0: none) */
	__u64 key; /* the current thread's stack_self_key */
	__u32 found;
};

/*
 * One thread state of the interpreter's list (bpf_loop's body): one copy each. One that
 * names no thread (not bound yet) is passed over.
 */
static long stack_ts_next(__u32 i, void *arg)
{
	struct stack_ts_find *f = arg;

	if (!f->ts || bpf_probe_read_user(f->s->tsb, STACK_TS, (const void *)f->ts))
		return 1;
	if (stack_ts_key(f->c, f->s) == f->key) {
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
	struct stack_ts_find f = { .c = c, .s = s, .key = stack_self_key(c, tid) };

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
	if (stack_ts_load(c, s, ca->tstate) != stack_self_key(c, tid))
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
	s->walk.fresh = 1;
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
 * One frame (bpf_loop's body; its state is in the scratch buffer, see stack_py_walk). Each
 * read of user memory is costly (bench/RESULTS.md): frames come from the window (or,
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

#endif /* BPFSIGHT_STACK_PYTHON_BPF_H */
