// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched: one record per off-CPU interval of a traced thread, carrying the state it left in
 * (blocked vs preempted), when it became runnable again and who woke it, and the length of
 * the run slice that preceded it. One record per context switch, never two.
 *
 * A thread's state lives in BPF task storage (the _btf programs), found from the
 * task_struct the tracepoint hands over, and the slot's existence says the thread is traced:
 * the target check (a hash lookup) runs when a thread without one is switched out, not on
 * every switch and wakeup. With a hash keyed by tid, a switch of two traced threads cost
 * four hash lookups (the target check and the state, of each) and probe reads of pid and
 * tgid: the programs took ~450 ns per switch and ~200 ns per wakeup on the benchmark VM
 * (bench/RESULTS.md, pingpong). Kernels without BTF (the _raw programs) cannot use task
 * storage, so they keep the hash, cleaned up when a thread exits.
 *
 * sched_switch hands over prev_state only since Linux 5.18 (commit fa2c3254d7cf,
 * "sched/tracing: Don't re-read p->state when emitting sched_switch event"); a program that
 * reads a 4th argument is refused before that. The *_taskstate_* programs read the state
 * from the task instead, through CO-RE, as the tracepoint itself did before 5.18; user
 * space loads one kind (user/sched.c, kernel_features.h).
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

/* task -> its state (tp_btf programs). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_sched);
} thread_sched_task SEC(".maps");

/* tid -> its state (raw_tp programs, for kernels without BTF). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_sched);
} thread_sched SEC(".maps");

static __always_inline void switch_out(struct thread_sched *ts, __u32 state, __u64 now)
{
	ts->out_ts = now;
	ts->state = state;
	ts->wake_ts = state == TASK_RUNNING_STATE ? now : 0;
	ts->waker_tid = 0;
}

static __always_inline void switch_in(struct thread_sched *ts, __u32 pid, __u32 tid, __u64 now)
{
	struct bs_offcpu *r;
	__u64 out_ts, in_ts;

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

static __always_inline void wakeup(struct thread_sched *ts)
{
	/* Only a sleeping thread's first wakeup counts; preempted threads were runnable. */
	if (!ts->out_ts || ts->wake_ts)
		return;
	ts->wake_ts = bpf_ktime_get_ns();
	/* The waker is current only when the wakeup is not deferred to the target CPU. */
	ts->waker_tid = (__u32)bpf_get_current_pid_tgid();
}

/* The field was `long state` until 5.14 (commit 2f064a59a11f, "sched: Change
 * task_struct::state"). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* What sched_switch's prev_state says, read from the task (kernels before 5.18). */
static __always_inline __u32 task_state_now(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* tp_btf + task storage: prev, next and p are the kernel's own task pointers. */
static __always_inline struct thread_sched *task_state(struct task_struct *t, bool create)
{
	struct thread_sched *ts = bpf_task_storage_get(&thread_sched_task, t, 0, 0);

	/* pid 0 is the idle task of each CPU, not a thread anyone traces. */
	if (ts || !create || !t->pid || !bs_is_target(t->tgid))
		return ts;
	ts = bpf_task_storage_get(&thread_sched_task, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		bs_count_loss(BS_LOSS_TASK_MAP);
	return ts;
}

static __always_inline void on_switch_btf(bool preempt, struct task_struct *prev,
					  struct task_struct *next, __u32 prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct thread_sched *ts;

	ts = task_state(prev, true);
	if (ts)
		switch_out(ts, preempt ? TASK_RUNNING_STATE : prev_state, now);
	/* First sight of a traced thread at switch-in: its off-CPU interval began before
	 * tracing; its slot is made when it is switched out. */
	ts = task_state(next, false);
	if (ts)
		switch_in(ts, next->tgid, next->pid, now);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch_btf(preempt, prev, next, prev_state);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_taskstate_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	on_switch_btf(preempt, prev, next, task_state_now(prev));
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	struct thread_sched *ts = task_state(p, false);

	if (ts)
		wakeup(ts);
	return 0;
}

/* raw_tp + hash: the same semantics without BTF. */
static __always_inline struct thread_sched *hash_state(struct task_struct *t, bool create)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	struct thread_sched *ts, init = {};

	if (!tid || !bs_is_target(BPF_CORE_READ(t, tgid)))
		return NULL;
	ts = bpf_map_lookup_elem(&thread_sched, &tid);
	if (ts || !create)
		return ts;
	if (bpf_map_update_elem(&thread_sched, &tid, &init, BPF_NOEXIST)) {
		bs_count_loss(BS_LOSS_TASK_MAP);
		return NULL;
	}
	return bpf_map_lookup_elem(&thread_sched, &tid);
}

static __always_inline void on_switch_raw(bool preempt, struct task_struct *prev,
					  struct task_struct *next, __u32 prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct thread_sched *ts;

	ts = hash_state(prev, true);
	if (ts)
		switch_out(ts, preempt ? TASK_RUNNING_STATE : prev_state, now);
	ts = hash_state(next, false);
	if (ts)
		switch_in(ts, BPF_CORE_READ(next, tgid), BPF_CORE_READ(next, pid), now);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch_raw(preempt, prev, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_taskstate_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	on_switch_raw(preempt, prev, next, task_state_now(prev));
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	struct thread_sched *ts = hash_state(p, false);

	if (ts)
		wakeup(ts);
	return 0;
}

/* A hash entry would outlive its thread; task storage is freed with the task. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_task_exit_raw, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&thread_sched, &tid);
	return 0;
}
