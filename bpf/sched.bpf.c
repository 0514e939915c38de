// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched: one record per off-CPU interval of a traced thread, carrying the state it left in
 * (blocked vs preempted), when it became runnable again and who woke it, and the length of
 * the run slice that preceded it. One record per context switch, never two.
 */
#include "common.bpf.h"

#define TASK_RUNNING_STATE 0

struct thread_sched {
	__u64 in_ts;   /* last switch-in (0 = not seen since tracing began) */
	__u64 out_ts;  /* last switch-out (0 = on CPU) */
	__u64 wake_ts; /* became runnable (preemption: = out_ts) */
	__u32 state;
	__u32 waker_tid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_sched);
} thread_sched SEC(".maps");

static __always_inline void switch_out(struct task_struct *prev, __u32 state, __u64 now)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	struct thread_sched *ts, init = {};

	ts = bpf_map_lookup_elem(&thread_sched, &tid);
	if (!ts) {
		if (bpf_map_update_elem(&thread_sched, &tid, &init, BPF_NOEXIST)) {
			bs_count_loss(BS_LOSS_TASK_MAP);
			return;
		}
		ts = bpf_map_lookup_elem(&thread_sched, &tid);
		if (!ts)
			return;
	}
	ts->out_ts = now;
	ts->state = state;
	ts->wake_ts = state == TASK_RUNNING_STATE ? now : 0;
	ts->waker_tid = 0;
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	__u32 pid = BPF_CORE_READ(next, tgid);
	struct thread_sched *ts;
	struct bs_offcpu *r;
	__u64 out_ts, in_ts;

	ts = bpf_map_lookup_elem(&thread_sched, &tid);
	if (!ts)
		return; /* first sight: its off-CPU interval began before tracing */
	out_ts = ts->out_ts;
	in_ts = ts->in_ts;
	ts->in_ts = now;
	ts->out_ts = 0;
	if (!out_ts)
		return;
	r = bs_reserve(BS_REC_OFFCPU, sizeof(*r), pid, tid, out_ts);
	if (!r)
		return;
	r->dur = now - out_ts;
	/* A blocked thread whose wakeup we missed is counted as blocked throughout. */
	r->runnable_ns = ts->wake_ts ? now - ts->wake_ts : 0;
	r->oncpu_ns = in_ts ? out_ts - in_ts : 0;
	r->state = ts->state;
	r->waker_tid = ts->waker_tid;
	bs_submit(r);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, __u32 prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	/* pid 0 is the idle task of each CPU, not a thread anyone traces. */
	if (BPF_CORE_READ(prev, pid) && bs_is_target(BPF_CORE_READ(prev, tgid)))
		switch_out(prev, preempt ? TASK_RUNNING_STATE : prev_state, now);
	if (BPF_CORE_READ(next, pid) && bs_is_target(BPF_CORE_READ(next, tgid)))
		switch_in(next, now);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct thread_sched *ts;

	if (!bs_is_target(BPF_CORE_READ(p, tgid)))
		return 0;
	ts = bpf_map_lookup_elem(&thread_sched, &tid);
	/* Only a sleeping thread's first wakeup counts; preempted threads were runnable. */
	if (!ts || !ts->out_ts || ts->wake_ts)
		return 0;
	ts->wake_ts = bpf_ktime_get_ns();
	/* The waker is current only when the wakeup is not deferred to the target CPU. */
	ts->waker_tid = (__u32)bpf_get_current_pid_tgid();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

static __always_inline int on_task_exit(struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&thread_sched, &tid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_task_exit_btf, struct task_struct *p)
{
	return on_task_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_task_exit_raw, struct task_struct *p)
{
	return on_task_exit(p);
}
