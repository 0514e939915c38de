/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Generic entry/return uprobes for API families (cuda, nccl): one pair of programs serves
 * every probed function; the probe's bpf_cookie (records.h, BS_UCOOKIE) says which function
 * it is and what to capture. ucall.bpf.c, the one object of every such family, defines
 * UCALL_REC_TYPE and UCALL_LOSS_DEPTH (its loss cause for calls nested deeper than
 * UCALL_MAX_DEPTH) as rodata the family sets, and includes this.
 *
 * Entry pushes a frame (time, cookie, 6 register + 6 stack argument words) on a per-thread
 * stack: no hash insert/delete per call, and nesting (a driver call inside a runtime call) is
 * kept as depth. Return pops it and emits one bs_ucall record, copying pointees (config
 * structs, names) and the out value only then, when they hold their final values. Entry
 * probes sit where rsp still points at the return address (probe_site.h), so the stack
 * arguments are at 8(%rsp) on entry and at 0(%rsp) after the return.
 *
 * The stack lives in a slot of an array map found by tid (user space maps it with --trigger
 * hang, and reads which calls are in flight: ucall_family.h): the verifier inlines an array
 * lookup, where task storage costs two helper calls (bpf_get_current_task_btf,
 * bpf_task_storage_get) at entry and again at return (what that costs a call:
 * bench/RESULTS.md, "Figures the code's comments cite"; docs/CUDA.md "What a call costs"). A thread claims a free slot among
 * UCALL_PROBES from tid % UCALL_SLOTS on its first traced call and owns it until it exits
 * (ucall_exit_btf frees it). A thread that finds none free keeps its stack in task storage
 * for the rest of its life: more threads than slots cost time, never calls.
 */
#ifndef BPFSIGHT_UCALL_BPF_H
#define BPFSIGHT_UCALL_BPF_H

#include "stack.bpf.h"
#include "ucall_records.h"

#ifndef UCALL_REC_TYPE
#error "define UCALL_REC_TYPE (BS_REC_*) before including ucall.bpf.h"
#endif
#ifndef UCALL_LOSS_DEPTH
#error "define UCALL_LOSS_DEPTH (the family's BS_LOSS_*) before including ucall.bpf.h"
#endif

/* --stacks: calls (outermost ones) lasting at least this get the caller's stack; ~0 = none. */
const volatile __u64 ucall_stack_ns = ~0ull;
/*
 * Whether any function of the table has words that point to their value (the cookies'
 * BS_UCOOKIE_BYREF: Fortran BLAS). 0: their reads are pruned before verification, which
 * checks the 12 unrolled reads once for every way an entry reaches them.
 */
const volatile __u32 ucall_byref = 0;

#define UCALL_MAX_DEPTH BS_UCALL_MAX_DEPTH
#define UCALL_SLOTS	BS_UCALL_SLOTS
#define UCALL_PROBES	4 /* slots a thread may take, from tid % UCALL_SLOTS on */

/* libbpf 1.1's bpf_tracing.h stops at PARM5; uprobe families are x86-64 only for now. */
#if defined(__TARGET_ARCH_x86)
#define UCALL_PARM6(ctx) ((ctx)->r9)
#else
#error "ucall.bpf.h: only x86-64 argument registers are described"
#endif

/* The frames and slots are the contract's (ucall_records.h): the hang trigger reads them. */
#define ucall_frame  bs_ucall_frame
#define ucall_thread bs_ucall_thread

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UCALL_SLOTS);
	__type(key, __u32);
	__type(value, struct ucall_thread);
} ucall_slots SEC(".maps");

/* Threads that found no free slot. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ucall_thread);
} ucall_stack SEC(".maps");

/* The slot TID owns, or NULL. Only the owner writes a slot's frames and depth. */
static __always_inline struct ucall_thread *ucall_slot(__u32 tid)
{
#pragma unroll
	for (__u32 i = 0; i < UCALL_PROBES; i++) {
		__u32 k = (tid + i) & (UCALL_SLOTS - 1);
		struct ucall_thread *t = bpf_map_lookup_elem(&ucall_slots, &k);

		if (t && t->owner == tid)
			return t;
	}
	return NULL;
}

/* A slot for TID if one is free; racing claimers are ordered by the compare-and-swap. */
static __always_inline struct ucall_thread *ucall_claim(__u32 tid)
{
#pragma unroll
	for (__u32 i = 0; i < UCALL_PROBES; i++) {
		__u32 k = (tid + i) & (UCALL_SLOTS - 1);
		struct ucall_thread *t = bpf_map_lookup_elem(&ucall_slots, &k);

		if (t && !t->owner && !__sync_val_compare_and_swap(&t->owner, 0, tid)) {
			t->depth = 0;
			return t;
		}
	}
	return NULL;
}

/*
 * A thread in a pid namespace below ours says its id there, once, at its first call: its
 * process's cupti-shim names it so in GPU records, which user space must tie to our id
 * even after the thread is gone (bs_thread_ns).
 */
static __always_inline void ucall_note_ns(struct task_struct *task, __u64 id)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	struct bs_thread_ns *r;
	struct upid up;

	if (!level || level > 32)
		return;
	if (bpf_core_read(&up, sizeof(up), &p->numbers[level]))
		return;
	r = bs_reserve_life(BS_REC_THREAD_NS, sizeof(*r), id >> 32, (__u32)id, bpf_ktime_get_ns());
	if (!r)
		return;
	r->ns_tid = up.nr;
	r->level = level;
	bs_submit(r);
}

/*
 * The stack of the calling thread when it has no slot: in task storage, or (CREATE, a
 * traced thread's first call) a slot claimed now, or new task storage. NULL: not traced.
 */
static __always_inline struct ucall_thread *ucall_thread_slow(__u64 id, bool create)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ucall_thread *t;

	/* A thread that went to task storage stays there: its frames are there. */
	t = bpf_task_storage_get(&ucall_stack, task, 0, 0);
	if (t || !create)
		return t;
	/* The target check (a hash lookup): once per traced thread, on its first call. */
	if (!bs_is_target(id >> 32))
		return NULL;
	ucall_note_ns(task, id);
	t = ucall_claim((__u32)id);
	if (t)
		return t;
	t = bpf_task_storage_get(&ucall_stack, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		bs_count_loss(BS_LOSS_TASK_MAP);
	return t;
}

/*
 * The depth of T's stack without the frames below BELOW (deeper in the stack): calls that
 * returned unseen, as when an exception or longjmp left them, or the kernel could not
 * hijack their return. A call runs only while rsp is below where its return address sat; a
 * frame at the same place may be a tail call's (an interposer jumping to the real
 * function), so it stays.
 */
static __always_inline __u32 ucall_unwind(struct ucall_thread *t, __u64 below)
{
	__u32 d = t->depth;

	/* Frames past the last kept one went with it, if it went. */
	if (d > UCALL_MAX_DEPTH && t->f[UCALL_MAX_DEPTH - 1].sp >= below)
		return d;
		/* From the top: the first frame still running is the new top. */
#pragma unroll
	for (__u32 i = UCALL_MAX_DEPTH; i > 0; i--)
		if (i <= d && t->f[i - 1].sp >= below)
			return i;
	return 0;
}

/* The words of MASK point to their values (Fortran BLAS's ints): read them now, at entry. */
static __always_inline void ucall_read_byref(struct ucall_frame *f, __u32 mask)
{
#pragma unroll
	for (int i = 0; i < BS_UCALL_NARGS; i++) {
		__u32 v = 0;

		if (!(mask & (1u << i)))
			continue;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)f->args[i]))
			v = 0;
		f->args[i] = v;
	}
}

/*
 * A call's entry: push its frame. 1 when nothing is pushed, so its return has nothing to do:
 * a thread not traced, or a WRAPPED call made directly by a WRAPS one (a driver launch inside
 * a runtime launch: the same launch, recorded once, by the runtime's pair). The return
 * program, if it runs (not on a uprobe session: ucall_session), then finds no frame of its
 * own and emits nothing.
 */
static __always_inline int ucall_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct ucall_thread *t;
	struct ucall_frame *f;
	__u32 d;

	barrier_var(sp);
	t = ucall_slot((__u32)id);
	if (!t) {
		t = ucall_thread_slow(id, true);
		if (!t)
			return 1;
	}
	d = t->depth ? ucall_unwind(t, sp) : 0;
	if ((cookie & BS_UCOOKIE_WRAPPED) && d && d <= UCALL_MAX_DEPTH &&
	    (t->f[(d - 1) & (UCALL_MAX_DEPTH - 1)].cookie & BS_UCOOKIE_WRAPS)) {
		t->depth = d;
		return 1;
	}
	t->depth = d + 1;
	if (d >= UCALL_MAX_DEPTH) {
		bs_count_loss(UCALL_LOSS_DEPTH);
		return 0;
	}
	f = &t->f[d];
	f->sp = sp;
	f->cookie = cookie;
	f->args[0] = PT_REGS_PARM1(ctx);
	f->args[1] = PT_REGS_PARM2(ctx);
	f->args[2] = PT_REGS_PARM3(ctx);
	f->args[3] = PT_REGS_PARM4(ctx);
	f->args[4] = PT_REGS_PARM5(ctx);
	f->args[5] = UCALL_PARM6(ctx);
	/* 7th.. argument words, above the return address, for functions that have them (a
	 * user-memory copy is a good part of the cost). A fault leaves zeros. */
	if (f->cookie & BS_UCOOKIE_STACK)
		bpf_probe_read_user(&f->args[6], 6 * sizeof(__u64), (void *)(sp + 8));
	else
		__builtin_memset(&f->args[6], 0, 6 * sizeof(__u64));
	if (ucall_byref && BS_UCOOKIE_BYREF(cookie))
		ucall_read_byref(f, BS_UCOOKIE_BYREF(cookie));
	f->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe")
int ucall_entry(struct pt_regs *ctx)
{
	ucall_enter(ctx);
	return 0;
}

/* Where a deref reads from: an argument's pointee, or the stack-argument area. */
static __always_inline const void *ucall_deref_src(const struct ucall_frame *f, __u64 sp)
{
	__u32 arg = BS_UCOOKIE_DEREF_ARG(f->cookie);
	__u64 base;

	if (arg == BS_DEREF_ARG_STACK)
		base = sp; /* after ret: the caller's outgoing arguments */
	else if (arg >= 1 && arg <= BS_UCALL_NARGS)
		base = f->args[arg - 1];
	else
		return 0;
	return (const void *)(base + BS_UCOOKIE_DEREF_OFF(f->cookie));
}

/* Reserve the record (and LEN bytes of deref after it), fill it from frame F. */
static __always_inline struct bs_ucall *ucall_reserve(const struct ucall_frame *f,
						      struct pt_regs *ctx, __u64 id, __u64 now,
						      __u32 depth, __u32 len)
{
	struct bs_ucall *r =
		bs_reserve(UCALL_REC_TYPE, sizeof(*r) + len, id >> 32, (__u32)id, f->ts);
	__u32 out = BS_UCOOKIE_OUT_ARG(f->cookie);

	if (!r)
		return NULL;
	r->dur = now - f->ts;
	r->ret = PT_REGS_RC(ctx);
	r->fn = BS_UCOOKIE_FN(f->cookie);
	r->depth = depth;
	r->deref_len = len;
	r->out = 0;
	__builtin_memcpy(r->args, f->args, sizeof(r->args));
	if (out >= 1 && out <= BS_UCALL_NARGS)
		bpf_probe_read_user(&r->out, sizeof(r->out), (void *)f->args[out - 1]);
	return r;
}

/* A call's return: pop its frame, emit its record. */
static __always_inline int ucall_leave(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	/* Read into a scalar up front: the verifier rejects a load through a ctx pointer the
	 * compiler would otherwise select between ctx and a map value. */
	__u64 sp = PT_REGS_SP(ctx);
	struct ucall_thread *t;
	struct ucall_frame *f;
	struct bs_ucall *r;
	const void *src;
	__u32 d, mode;

	barrier_var(sp);
	t = ucall_slot((__u32)id);
	if (!t) {
		t = ucall_thread_slow(id, false);
		if (!t)
			return 0; /* not traced */
	}
	if (t->depth == 0)
		return 0; /* the call began before its probe was attached */
	/* After ret, rsp is 8 above where the entry found it. */
	d = ucall_unwind(t, sp - 8);
	if (d > UCALL_MAX_DEPTH) {
		t->depth = d - 1; /* a frame counted as lost at entry */
		return 0;
	}
	/* UCALL_MAX_DEPTH is a power of two: the mask only tells the verifier. */
	f = &t->f[(d - 1) & (UCALL_MAX_DEPTH - 1)];
	if (d == 0 || f->sp != sp - 8) {
		t->depth = d; /* the call began before its entry probe was attached */
		return 0;
	}
	t->depth = --d;
	/* Before the call's record, which then follows its stack in the ring (STACK_REF). At
	 * return the stack begins at the caller: the return address is its instruction. */
	if (ucall_stack_ns != ~0ull && !d && now - f->ts >= ucall_stack_ns)
		stack_emit(UCALL_REC_TYPE, id >> 32, (__u32)id, f->ts, 0);
	mode = BS_UCOOKIE_MODE(f->cookie);
	src = ucall_deref_src(f, sp);
	if (mode == BS_DEREF_STRUCT && src) {
		r = ucall_reserve(f, ctx, id, now, d, BS_UCALL_DEREF_STRUCT);
		if (!r)
			return 0;
		/* A small struct near the end of a mapping faults the full copy: take less. */
		if (bpf_probe_read_user(r + 1, BS_UCALL_DEREF_STRUCT, src) &&
		    bpf_probe_read_user(r + 1, 128, src) && bpf_probe_read_user(r + 1, 64, src))
			__builtin_memset(r + 1, 0, BS_UCALL_DEREF_STRUCT);
	} else if (mode == BS_DEREF_STRING && src) {
		r = ucall_reserve(f, ctx, id, now, d, BS_UCALL_DEREF_STRING);
		if (!r)
			return 0;
		if (bpf_probe_read_user_str(r + 1, BS_UCALL_DEREF_STRING, src) < 0)
			*(char *)(r + 1) = 0;
	} else {
		r = ucall_reserve(f, ctx, id, now, d, 0);
		if (!r)
			return 0;
	}
	/* Whether the consumer needs a wakeup (the query is a helper call, ~9 ns here) is
	 * asked every 16th record of a thread: 16 records are 2.4 KB, the threshold 1 MB. */
	if (++t->sent % 16)
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	else
		bs_submit(r);
	return 0;
}

SEC("uretprobe")
int ucall_return(struct pt_regs *ctx)
{
	return ucall_leave(ctx);
}

/*
 * WRAPPED functions on a uprobe session (Linux 6.13+, KF_UPROBE_SESSION): one program for
 * the entry and the return, and an entry that returns 1 has no return probe at all. A driver
 * launch made by a runtime launch then costs its entry probe alone; one made directly
 * (cuBLAS) is timed and recorded as any call.
 *
 * Which of the two runs: the kernel hands a uprobe_multi program the probed address as its
 * function ip at the entry, where rip is that address, and at the return, where rip is back
 * in the caller. (Not the kfunc bpf_session_is_return: libbpf 1.1 refuses a whole object
 * whose extern kfunc's prototype differs from the kernel's, and that prototype is not
 * settled.)
 */
SEC("uprobe")
int ucall_session(struct pt_regs *ctx)
{
	if (PT_REGS_IP(ctx) != bpf_get_func_ip(ctx))
		return ucall_leave(ctx);
	return ucall_enter(ctx);
}

/* A slot is free again when its owner exits; a task-storage stack goes with its task. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ucall_exit_btf, struct task_struct *p)
{
	struct ucall_thread *t = ucall_slot(p->pid);

	if (t) {
		t->depth = 0;
		*(volatile __u64 *)&t->owner = 0; /* after depth: a claimer sees 0 */
	}
	return 0;
}

#endif /* BPFSIGHT_UCALL_BPF_H */
