/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a task is doing now, read from its task_struct by a program that is not that task: its
 * state and how long it has been off its CPU. The snapshots of `bpfsight stacks` and of a
 * recording's edges read them (snap.bpf.c), and so do the families that carry an interval
 * open at the start into the recording (sched, osrt: their start iterators).
 */
#ifndef BPFSIGHT_TASK_NOW_BPF_H
#define BPFSIGHT_TASK_NOW_BPF_H

/* The field was `long state` until 5.14 (commit 2f064a59a11f, "sched: Change
 * task_struct::state"). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* T's state: 0 running or runnable, else TASK_* bits (1 sleeping, 2 disk). */
static __always_inline __u32 task_state_now(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* The clocks of the runqueue T was last on (the fair class's, through its entity): 0 or -1. */
static __always_inline int task_rq_clocks(struct task_struct *t, __u64 *clock, __u64 *clock_task)
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
static __always_inline __u64 task_off_cpu_ns(struct task_struct *t)
{
	struct task_struct *me = bpf_get_current_task_btf();
	__u64 ran = BPF_CORE_READ(t, se.exec_start), now = BPF_CORE_READ(me, se.exec_start);
	__u64 tc, tct, mc, mct, lag, queued = 0;

	if (t->on_cpu)
		return 0;
	/*
	 * A thread ready to run: since it was queued (sched_info, the runqueue's clock), what its
	 * schedstat counts as its wait when it gets its CPU. exec_start is 0 for a thread that
	 * migrated or never ran since its birth (migrate_task_rq_fair, __sched_fork): it read as
	 * off its CPU a moment, and the ledger lost the waits of a new thread and of a process
	 * moved by taskset (0.79 of its time ready to run against 1.23 by its clock).
	 */
	if (bpf_core_field_exists(t->sched_info.last_queued) && !task_state_now(t))
		queued = BPF_CORE_READ(t, sched_info.last_queued);
	if (bpf_core_field_exists(t->se.cfs_rq) && bpf_core_field_exists(struct cfs_rq, rq) &&
	    !task_rq_clocks(t, &tc, &tct) && !task_rq_clocks(me, &mc, &mct)) {
		lag = mc > tc ? mc - tc : 0;
		if (queued)
			return (tc > queued ? tc - queued : 0) + lag;
		return (ran && tct > ran ? tct - ran : 0) + lag;
	}
	return ran && now > ran ? now - ran : 0;
}

/*
 * A slot of task storage MAP made now for T, a target's thread the recording has no slot for
 * yet (the start iterators): NULL when T is no target, is bpfsight's own, already had one, or
 * none could be made (counted as a loss).
 */
static __always_inline void *task_slot_new(void *map, struct task_struct *t)
{
	void *v;

	if (!t->pid || !bs_is_target(t->tgid) || bs_is_own_helper(t->tgid) ||
	    bpf_task_storage_get(map, t, 0, 0))
		return NULL;
	v = bpf_task_storage_get(map, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		bs_count_loss(BS_LOSS_TASK_MAP);
	return v;
}

#endif /* BPFSIGHT_TASK_NOW_BPF_H */
