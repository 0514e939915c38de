/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The current thread's user stack unwound by frame pointers (stack_unwind), from the user
 * registers saved where it entered the kernel: the stack copied a page at a time, a frame
 * pointer followed only up the stack, a pending uretprobe's trampoline replaced by the
 * return address the kernel keeps for it. Nothing is symbolized here (the recorder does it:
 * user/stacks/native_frames.c).
 */
#ifndef BPFSIGHT_STACK_NATIVE_BPF_H
#define BPFSIGHT_STACK_NATIVE_BPF_H

#include "stack_scratch.bpf.h"

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

/* bpf_loop's argument for the native walk: the scratch buffer, the process's tables. */
struct stack_native_arg {
	struct stack_scratch *s;
	const struct bs_unw_proc *p; /* NULL: no file of the process has a table */
};

/*
 * bpf_loop's argument for a binary search (stack_unw_map's, stack_unw_row's), on the BPF stack.
 * Its bounds live in the scratch buffer (u->lo, u->top), whose values the verifier does not
 * track, and each round is a bpf_loop body: the verifier checks a round once or twice for
 * every way the walk reaches the search, not once per round (an unrolled loop of 25 rounds
 * was half of the instructions a program with a stack walk verifies). The kernel inlines
 * bpf_loop (5.19+): a round costs a direct call.
 */
struct stack_search_arg {
	struct stack_fp_walk *u;
	const struct bs_unw_proc *p; /* stack_unw_map's process */
	__u64 key;		     /* the address (a mapping's) or ELF pc (a row's) searched */
	int bad;		     /* stack_unw_row's: a row could not be read */
};

/* A round of stack_unw_map's search: the mappings whose start is <= key go below u->lo. */
static long stack_unw_map_round(__u32 k, void *arg)
{
	struct stack_search_arg *a = arg;
	struct stack_fp_walk *u = a->u;
	__u32 mid;

	if (u->lo >= u->top)
		return 1;
	mid = (u->lo + u->top) / 2;
	if (a->key < a->p->m[mid & (BS_UNW_MAPS - 1)].start)
		u->top = mid;
	else
		u->lo = mid + 1;
	return 0;
}

/* The mapping of P that holds IP (a binary search over its starts), or NULL. */
static __always_inline const struct bs_unw_map *stack_unw_map(const struct bs_unw_proc *p,
							      struct stack_fp_walk *u, __u64 ip)
{
	const struct bs_unw_map *m = &p->m[u->map & (BS_UNW_MAPS - 1)];
	struct stack_search_arg a = { .u = u, .p = p, .key = ip };
	__u32 mid;

	/* Frames come in runs of one file: the last frame's mapping first. */
	if (u->map < p->n && ip >= m->start && ip < m->end)
		return m;
	u->lo = 0;
	u->top = p->n;
	bpf_loop(BS_UNW_MAP_SEARCH, stack_unw_map_round, &a, 0);
	mid = u->lo;
	if (!mid || mid > BS_UNW_MAPS)
		return NULL;
	m = &p->m[(mid - 1) & (BS_UNW_MAPS - 1)];
	if (ip >= m->end)
		return NULL;
	u->map = mid - 1;
	return m;
}

/* Row I of unw_rows (two to an element: bs_unw_pair), or NULL. */
static __always_inline const struct bs_unwind_row *stack_unw_row_at(__u32 i)
{
	__u32 key = i / 2;
	const struct bs_unw_pair *p = bpf_map_lookup_elem(&unw_rows, &key);

	return p ? &p->r[i & 1] : NULL;
}

/* A round of stack_unw_row's search: the rows whose pc is <= key go below u->lo. */
static long stack_unw_row_round(__u32 k, void *arg)
{
	struct stack_search_arg *a = arg;
	struct stack_fp_walk *u = a->u;
	const struct bs_unwind_row *r;
	__u32 half;

	if (u->lo >= u->top)
		return 1;
	half = (u->top - u->lo) / 2;
	r = stack_unw_row_at(u->lo + half);
	if (!r) {
		a->bad = 1;
		return 1;
	}
	if (r->pc <= a->key)
		u->lo = u->lo + half + 1;
	else
		u->top = u->lo + half;
	return 0;
}

/*
 * The row of M's table that covers ELF address PC (the last with row.pc <= PC) into *OUT:
 * from unw_cache when it holds it, else by a binary search of the table (then kept there).
 * 0, or -1 when no row covers PC.
 */
static __always_inline int stack_unw_row(const struct bs_unw_map *m, struct stack_fp_walk *u,
					 __u64 pc, struct bs_unwind_row *out)
{
	__u32 file = m->row0 + 1, slot = bs_unw_cache_slot((__u32)pc, file);
	struct stack_search_arg a = { .u = u, .key = pc };
	struct bs_unw_cache_ent *e;
	const struct bs_unwind_row *r;

	if (pc >> 32 || m->nrows > BS_UNW_MAX_ROWS)
		return -1;
	e = bpf_map_lookup_elem(&unw_cache, &slot);
	if (e && !bs_unw_cache_get(e, (__u32)pc, file, out))
		return 0;
	u->lo = m->row0;
	u->top = m->row0 + m->nrows;
	bpf_loop(BS_UNW_SEARCH + 1, stack_unw_row_round, &a, 0);
	if (a.bad || u->lo == m->row0)
		return -1;
	r = stack_unw_row_at(u->lo - 1);
	if (!r)
		return -1;
	*out = *r;
	if (e)
		bs_unw_cache_put(e, (__u32)pc, file, r);
	return 0;
}

/*
 * The caller of the frame at hand by its table's row R (bs_unw_cfa): its CFA, return address
 * and rbp into *CFA, *RA, *BP (the caller's rsp is the CFA). 0, 2 after a signal frame (the
 * interrupted registers: *RA is an instruction, not a return address), or 1 when the walk
 * ends here (u->end says why).
 */
static __always_inline int stack_unw_step(struct stack_scratch *s, const struct bs_unwind_row *r,
					  __u64 *cfa, __u64 *ra, __u64 *bp)
{
	struct stack_fp_walk *u = &s->fpw;
	const __u8 *b;
	int how = bs_unw_cfa(r, u->ip, u->sp, u->bp, u->hi, cfa);

	if (how == BS_UNW_STEP_SIGNAL) {
		b = stack_page_bytes(s, u->sp + BS_UC_RBP, BS_UC_RIP + 8 - BS_UC_RBP);
		if (!b)
			goto bad;
		*bp = *(const __u64 *)b;
		*cfa = *(const __u64 *)(b + BS_UC_RSP - BS_UC_RBP);
		*ra = *(const __u64 *)(b + BS_UC_RIP - BS_UC_RBP);
		return 2;
	}
	if (how == BS_UNW_STEP_DEREF) {
		/* Stack realignment: the CFA and the caller's rbp saved in the frame. */
		b = stack_page_bytes(s, u->bp + r->cfa_off, 8);
		if (!b)
			goto bad;
		*cfa = *(const __u64 *)b;
		b = stack_page_bytes(s, u->bp + r->rbp_off, 8);
		if (!b || !bs_unw_cfa_ok(*cfa, u->sp, u->hi))
			goto bad;
		*bp = *(const __u64 *)b;
	} else if (how != BS_UNW_STEP_CFA) {
		u->end = how;
		return 1;
	} else if (r->rbp_off) {
		b = stack_page_bytes(s, *cfa + r->rbp_off, 8);
		if (!b)
			goto bad;
		*bp = *(const __u64 *)b;
	}
	b = stack_page_bytes(s, *cfa - 8, 8);
	if (!b)
		goto bad;
	*ra = *(const __u64 *)b;
	return 0;
bad:
	u->end = BS_CUT_BAD_CFA + 1;
	return 1;
}

/*
 * One frame of the native walk (bpf_loop's body; ARG is a struct stack_native_arg on the BPF
 * stack): the caller of the frame at hand, by its file's unwind table when it has one, else
 * by the frame pointer.
 */
static long stack_fp_frame(__u32 i, void *arg)
{
	struct stack_native_arg *a = arg;
	struct stack_scratch *s = a->s;
	struct stack_fp_walk *u = &s->fpw;
	struct bs_unwind_row row;
	const struct bs_unw_map *m = NULL;
	__u64 bp = u->bp, cfa, ra, at = u->ip - !u->exact;
	const __u8 *b;
	__u32 n = u->n;
	int step = 0;

	if (n >= u->max || n >= STACK_WORDS) {
		if (u->kept)
			u->end = BS_CUT_KEPT + 1;
		return 1;
	}
	if (a->p)
		m = stack_unw_map(a->p, u, at);
	/* A file built with frame pointers has no rows: walked by them (unwind_load.c). */
	if (m && m->nrows) {
		if (stack_unw_row(m, u, at - m->bias, &row)) {
			u->end = BS_CUT_NO_FDE + 1;
			return 1;
		}
		step = stack_unw_step(s, &row, &cfa, &ra, &bp);
		if (step == 1)
			return 1;
		if (!i)
			s->flags |= BS_STACK_UNW_FIRST;
	} else {
		/* The frame pointer: followed only up the stack, never where rbp is not one. */
		if ((bp & 7) || bp < u->sp || bp >= u->hi)
			return 1;
		b = stack_page_bytes(s, bp, 16);
		if (!b)
			return 1;
		bp = *(const __u64 *)b;
		ra = *(const __u64 *)(b + 8);
		cfa = u->bp + 16;
	}
	if (!ra)
		return 1;
	ra = stack_fp_ret(u, ra);
	s->w[n] = ra;
	u->n = n + 1;
	u->ip = ra;
	u->sp = cfa;
	u->bp = bp;
	/* After a signal frame: the interrupted instruction itself. */
	u->exact = step == 2;
	return 0;
}

/*
 * The current thread's user stack into S's words, innermost first (its instruction, then the
 * return addresses the walk finds: by the unwind tables of the files of PID that have one,
 * else by frame pointers; u->end says how it ended, copied to s->flags). With TOP, the
 * BS_STACK_TOP_WORDS words on top of the user stack go first (zeros when unreadable) and
 * BS_CPU_LEAF is set: the recorder finds among them the return addresses the walk misses.
 * The registers are those saved where the thread entered the kernel (a uprobe's trap, a
 * system call, the interrupt of a sample): the user's, whatever program runs this. KEEP:
 * the native frames wanted (< BS_STACK_MAX_FRAMES: the walk ends there, BS_CUT_KEPT).
 */
static __always_inline long stack_unwind(struct stack_scratch *s, __u32 pid, int top, __u32 keep)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct stack_native_arg a = { .s = s };
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
	u->ip = stack_fp_ret(u, r->ip);
	s->w[n & BS_STACK_TOP_WORDS] = u->ip;
	u->n = n + 1;
	u->kept = keep < BS_STACK_MAX_FRAMES;
	u->max = n + (u->kept ? keep : BS_STACK_MAX_FRAMES);
	u->sp = sp;
	u->bp = r->bp;
	u->exact = 1;
	a.p = bpf_map_lookup_elem(&unw_procs, &pid);
	bpf_loop(BS_STACK_MAX_FRAMES, stack_fp_frame, &a, 0);
	s->flags |= (u->end << BS_STACK_END_SHIFT) & BS_STACK_END_MASK;
	n = u->n;
	return n > BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES ? 0 : n;
}

#endif /* BPFSIGHT_STACK_NATIVE_BPF_H */
