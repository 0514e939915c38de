// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process and thread lifecycle, always loaded: it follows children of traced processes
 * (launch mode traces CMD's descendants) and names every thread that events refer to.
 * Each event is rare (fork/exec/exit/rename), so this costs nothing measurable.
 *
 * Children miss nothing: every new process whose parent is traced joins targets from
 * sched_process_fork, which runs before the child is first scheduled; threads share the tgid
 * and are covered at once. When the last thread of a process exits, its tgid leaves targets,
 * so a recycled pid is not traced by mistake. In launch mode CMD is forked before anything is
 * attached and waits on a pipe; once the probes are live and its pid is in targets, it is
 * released and execs (user/session/launch.c).
 *
 * Unwind tables (bpf/unwind_maps.h) follow the same lives here, not when user space reads the
 * records: a forked child walks by its parent's mappings from its first stack on, and a new
 * program is never walked by the old one's (user space registers the new program's files
 * when it reads the exec).
 */
#include "common.bpf.h"
#include "exclude.bpf.h"
#include "unwind_procs.bpf.h"

/* Ring-buffer memory is not zeroed: clear the tail so records are deterministic. */
static __always_inline void copy_comm(char *dst, const char *src_kernel)
{
	__builtin_memset(dst, 0, BS_COMM_LEN);
	bpf_probe_read_kernel_str(dst, BS_COMM_LEN, src_kernel);
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid);
	__u32 ctid = BPF_CORE_READ(child, pid);
	const struct bs_unw_proc *unw;
	struct bs_fork *r;

	/* -a's excluded: their children too, before they first run. */
	if (have_excluded && cpid == ctid && cpid != ppid)
		bs_exclude_at_fork(ppid, cpid);
	if (!bs_is_target(ppid))
		return 0;
	if (!trace_all && cpid == ctid) {
		__u8 one = 1;

		/* Before the child first runs: the tracepoint fires ahead of wake_up_new_task. */
		if (bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY))
			bs_count_loss(BS_LOSS_TARGET_MAP);
	}
	/* A new process has its parent's code where its parent had it. */
	if (cpid == ctid && cpid != ppid && (unw = bpf_map_lookup_elem(&unw_procs, &ppid)))
		bpf_map_update_elem(&unw_procs, &cpid, unw, BPF_ANY);
	r = bs_reserve_life(BS_REC_FORK, sizeof(*r), ppid, BPF_CORE_READ(parent, pid),
			    bpf_ktime_get_ns());
	if (!r)
		return 0;
	r->child_pid = cpid;
	r->child_tid = ctid;
	copy_comm(r->comm, BPF_CORE_READ(child, comm));
	bs_submit(r);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(proc_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

static __always_inline int on_exec(struct task_struct *p, pid_t old_tid)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	struct bs_exec *r;

	/* -a: a program --exclude-comm names is left out from its exec on. */
	if (bs_exclude_at_exec(pid) || !bs_is_target(pid))
		return 0;
	/* The old program's mappings describe nothing of the new one. */
	bpf_map_delete_elem(&unw_procs, &pid);
	r = bs_reserve_life(BS_REC_EXEC, sizeof(*r), pid, BPF_CORE_READ(p, pid),
			    bpf_ktime_get_ns());
	if (!r)
		return 0;
	r->old_tid = old_tid;
	r->_pad = 0;
	copy_comm(r->comm, BPF_CORE_READ(p, comm));
	bs_submit(r);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec_btf, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p, old_pid);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(proc_exec_raw, struct task_struct *p, pid_t old_pid)
{
	return on_exec(p, old_pid);
}

/*
 * The exiting thread's CPU time: its runtime as the scheduler last updated it (a switch, a
 * tick) and the slice it is running now, since se.exec_start. exec_start is on the scheduler's
 * clock, NOW on CLOCK_MONOTONIC: both count ns from boot where the clock is stable; a slice
 * that reads negative or longer than a tick could be (the clocks apart) is left out. Without
 * it a thread that computes and exits between two ticks has none of that time.
 */
#define EXIT_SLICE_MAX_NS 20000000ull
static __always_inline __u64 exit_cpu_ns(struct task_struct *p, __u64 now)
{
	__u64 sum = BPF_CORE_READ(p, se.sum_exec_runtime);
	__u64 start = BPF_CORE_READ(p, se.exec_start);

	return now > start && now - start < EXIT_SLICE_MAX_NS ? sum + (now - start) : sum;
}

static __always_inline int on_exit(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	__u32 tid = BPF_CORE_READ(p, pid);
	/*
	 * signal->live is decremented before this tracepoint in do_exit(); reading it works
	 * on kernels both before and after the tracepoint gained a group_dead argument (6.16).
	 */
	__u32 group_dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	struct bs_exit_cpu *r;

	if (!bs_is_target(pid)) {
		if (have_excluded && group_dead)
			bpf_map_delete_elem(&excluded, &pid); /* a recycled pid is not excluded */
		return 0;
	}
	r = bs_reserve_life(BS_REC_EXIT, sizeof(*r), pid, tid, bpf_ktime_get_ns());
	if (r) {
		r->e.exit_code = BPF_CORE_READ(p, exit_code);
		r->e.group_dead = group_dead;
		r->cpu_ns = exit_cpu_ns(p, r->e.h.ts);
		bs_submit(r);
	}
	/* A recycled pid must not inherit tracing. */
	if (group_dead && !trace_all)
		bpf_map_delete_elem(&targets, &pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit_btf, struct task_struct *p)
{
	return on_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(proc_exit_raw, struct task_struct *p)
{
	return on_exit(p);
}

static __always_inline int on_rename(struct task_struct *task, const char *comm)
{
	__u32 pid = BPF_CORE_READ(task, tgid);
	struct bs_comm *r;

	if (!bs_is_target(pid))
		return 0;
	r = bs_reserve_life(BS_REC_COMM, sizeof(*r), pid, BPF_CORE_READ(task, pid),
			    bpf_ktime_get_ns());
	if (!r)
		return 0;
	copy_comm(r->comm, comm);
	bs_submit(r);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(proc_rename_btf, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}

SEC("raw_tp/task_rename")
int BPF_PROG(proc_rename_raw, struct task_struct *task, const char *comm)
{
	return on_rename(task, comm);
}
