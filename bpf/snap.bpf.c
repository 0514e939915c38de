// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpfsight stacks` and the hang trigger's snapshot: every thread of one process, now, without
 * stopping it (user/stacks/snap.c, docs/STACKS.md "bpfsight stacks"):
 * - snap_tasks, a task iterator: each thread's state and the user registers saved where it
 *   entered the kernel, which are its registers now unless it runs on a CPU;
 * - snap_sample, on a per-thread task-clock perf event opened only for threads running on a
 *   CPU: the thread's own stack at the interrupt, read by the walkers every stack of a
 *   recording goes through (stack.bpf.h), as a STACK_RAW record.
 * One object: loading one costs a parse of the kernel's BTF, more than verifying both.
 */
#define BS_BLOCK 0x00
#include "stack.bpf.h"
#include "snap_task.h"

/*
 * The process read now: a global, not rodata, so that one loaded object reads one process
 * after another (a job's ranks, at a hang trigger) without a load each.
 */
__u32 snap_pid = 0;

/* The field was `long state` until 5.14 (commit 2f064a59a11f). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* The clocks of the runqueue T was last on (the fair class's, through its entity): 0 or -1. */
static __always_inline int rq_clocks(struct task_struct *t, __u64 *clock, __u64 *clock_task)
{
	struct cfs_rq *q = BPF_CORE_READ(t, se.cfs_rq);
	struct rq *rq = q ? BPF_CORE_READ(q, rq) : NULL;

	if (!rq)
		return -1;
	*clock = BPF_CORE_READ(rq, clock);
	*clock_task = BPF_CORE_READ(rq, clock_task);
	return 0;
}

/*
 * How long T has been off its CPU: se.exec_start is its runqueue's clock_task when it last
 * ran (update_curr, also as it blocks), so that clock now less it, plus how far that clock lags
 * the clock of the runqueue we run on (an idle CPU's clock stops: NOHZ), the one clock both
 * CPUs share (sched_clock). Not CLOCK_MONOTONIC, but at its rate: a difference is a duration.
 * The runqueue is found through the task's fair-class entity (no ksym: kernels without
 * CONFIG_KALLSYMS_ALL name no per-CPU variable); without group scheduling, our own entity's
 * exec_start (set at our CPU's last tick) stands for now. 0 while it runs.
 */
static __always_inline __u64 off_cpu_ns(struct task_struct *t)
{
	struct task_struct *me = bpf_get_current_task_btf();
	__u64 ran = BPF_CORE_READ(t, se.exec_start), now = BPF_CORE_READ(me, se.exec_start);
	__u64 tc, tct, mc, mct, lag;

	if (t->on_cpu)
		return 0;
	if (bpf_core_field_exists(t->se.cfs_rq) && bpf_core_field_exists(struct cfs_rq, rq) &&
	    !rq_clocks(t, &tc, &tct) && !rq_clocks(me, &mc, &mct)) {
		lag = mc > tc ? mc - tc : 0;
		return (tct > ran ? tct - ran : 0) + lag;
	}
	return now > ran ? now - ran : 0;
}

SEC("iter/task")
int snap_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct snap_task st = {};
	struct pt_regs *r;

	if (!t || t->tgid != snap_pid)
		return 0;
	st.tid = t->pid;
	if (bpf_core_field_exists(t->__state))
		st.state = BPF_CORE_READ(t, __state);
	else
		st.state = BPF_CORE_READ((struct task_struct___pre514 *)t, state);
	st.on_cpu = t->on_cpu;
	st.exiting = (t->flags & 0x4) || t->exit_state; /* PF_EXITING */
	st.switches = t->nvcsw + t->nivcsw;
	st.start_time = t->start_time;
	st.cpu_ns = t->se.sum_exec_runtime;
	st.fsbase = t->thread.fsbase;
	st.off_cpu_ns = off_cpu_ns(t);
	__builtin_memcpy(st.comm, t->comm, sizeof(st.comm));
	st.syscall = -1;
	st.kthread = !t->mm || (t->flags & 0x00200000); /* PF_KTHREAD */
	if (!st.kthread) {
		r = (struct pt_regs *)bpf_task_pt_regs(t);
		if (r) {
			st.ip = BPF_CORE_READ(r, ip);
			st.sp = BPF_CORE_READ(r, sp);
			st.bp = BPF_CORE_READ(r, bp);
			st.syscall = (__s64)BPF_CORE_READ(r, orig_ax);
			st.arg0 = BPF_CORE_READ(r, di);
		}
	}
	bpf_seq_write(ctx->meta->seq, &st, sizeof(st));
	return 0;
}

/* Its stack is wanted now: the dump wakes at once. */
SEC("perf_event")
int snap_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;

	if (pid == snap_pid && tid)
		stack_sample(ctx, pid, tid, BS_REC_STACK_RAW, BPF_RB_FORCE_WAKEUP);
	return 0;
}
