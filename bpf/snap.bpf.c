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
#include "stack.bpf.h"
#include "snap_task.h"
#include "task_now.bpf.h"
#include "task_regs.bpf.h"

/*
 * The process read now: a global, not rodata, so that one loaded object reads one process
 * after another (a job's ranks, at a hang trigger) without a load each.
 */
__u32 snap_pid = 0;

SEC("iter/task")
int snap_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct snap_task st = {};
	struct pt_regs *r;

	if (!t || t->tgid != snap_pid)
		return 0;
	st.tid = t->pid;
	st.state = task_state_now(t);
	st.on_cpu = t->on_cpu;
	st.exiting = (t->flags & 0x4) || t->exit_state; /* PF_EXITING */
	st.switches = t->nvcsw + t->nivcsw;
	st.start_time = t->start_time;
	st.cpu_ns = t->se.sum_exec_runtime;
	/* what /proc's schedstat says: the thread's own clock the ledger is checked against */
	if (bpf_core_field_exists(t->sched_info.run_delay))
		st.run_delay_ns = BPF_CORE_READ(t, sched_info.run_delay);
	/*
	 * A stamp is cleared as a thread gets its CPU or leaves the queue, so an asleep thread has
	 * none, but 6.12+'s delayed dequeue keeps an asleep thread queued a while, and moving it
	 * to another CPU then stamps it, a stamp its final dequeue leaves: its next switch-in adds
	 * the sleep since to run_delay (a thread asleep 300 ms after taskset moved it: +302 ms).
	 */
	if (bpf_core_field_exists(t->sched_info.last_queued) && st.state &&
	    BPF_CORE_READ(t, sched_info.last_queued))
		st.queue_stale = 1;
	st.fsbase = t->thread.fsbase;
	st.off_cpu_ns = task_off_cpu_ns(t);
	__builtin_memcpy(st.comm, t->comm, sizeof(st.comm));
	st.syscall = -1;
	/*
	 * mm read, not loaded: a pointer field loaded from the iterator's trusted task has the
	 * verifier look its type's "__safe_trusted"/"__safe_rcu" names up in the kernel's BTF, a
	 * linear search of ~150,000 types each (6.18): ~6 ms of every recording's start, for a
	 * program that runs once per thread (bench/RESULTS.md, "make check time").
	 */
	st.kthread = !BPF_CORE_READ(t, mm) || (t->flags & 0x00200000); /* PF_KTHREAD */
	if (!st.kthread) {
		r = (struct pt_regs *)bpf_task_pt_regs(t);
		if (r) {
			st.ip = PT_REGS_IP_CORE(r);
			st.sp = PT_REGS_SP_CORE(r);
			st.bp = PT_REGS_FP_CORE(r);
			st.syscall = BS_REGS_SYSCALL_CORE(r);
			st.arg0 = PT_REGS_PARM1_CORE_SYSCALL(r);
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
		stack_sample(ctx, pid, tid, BS_REC_STACK_RAW, BPF_RB_FORCE_WAKEUP, 0);
	return 0;
}
