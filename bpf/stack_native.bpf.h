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

#endif /* BPFSIGHT_STACK_NATIVE_BPF_H */
