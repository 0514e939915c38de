// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt: latency of every system call of the traced threads. A call at or above
 * threshold_ns becomes a record; a shorter one only bumps an in-kernel aggregate per
 * (thread, syscall), so counts stay exact at any rate while the file stays small.
 */
#include "common.bpf.h"

const volatile __u64 threshold_ns = 1000;

struct sys_start {
	__u64 ts;
	__u64 nr;
};

/* tid -> entry time of the call in flight. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct sys_start);
} sys_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct bs_syscall_agg_key);
	__type(value, struct bs_syscall_agg_val);
} sys_agg SEC(".maps");

static __always_inline int on_enter(long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct sys_start st;

	if (!bs_is_target(pid_tgid >> 32))
		return 0;
	st.ts = bpf_ktime_get_ns();
	st.nr = id;
	if (bpf_map_update_elem(&sys_start, &tid, &st, BPF_ANY))
		bs_count_loss(BS_LOSS_TASK_MAP);
	return 0;
}

static __always_inline void aggregate(__u32 pid, __u32 tid, __u32 nr, __u64 dur)
{
	struct bs_syscall_agg_key key = { .pid = pid, .tid = tid, .nr = nr };
	struct bs_syscall_agg_val *v, init;

	/* Only this thread updates its keys, so plain adds are race-free. */
	v = bpf_map_lookup_elem(&sys_agg, &key);
	if (v) {
		v->count++;
		v->total_ns += dur;
		if (dur < v->min_ns)
			v->min_ns = dur;
		if (dur > v->max_ns)
			v->max_ns = dur;
		return;
	}
	init.count = 1;
	init.total_ns = init.min_ns = init.max_ns = dur;
	if (bpf_map_update_elem(&sys_agg, &key, &init, BPF_NOEXIST))
		bs_count_loss(BS_LOSS_AGG_MAP);
}

static __always_inline int on_exit(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, pid = pid_tgid >> 32;
	struct sys_start *st;
	struct bs_syscall *r;
	__u64 now, start, dur;
	__u32 nr;

	/* No entry: the call began before we attached, or the thread is not traced. */
	st = bpf_map_lookup_elem(&sys_start, &tid);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	start = st->ts;
	nr = st->nr;
	bpf_map_delete_elem(&sys_start, &tid);
	dur = now - start;
	if (dur < threshold_ns) {
		aggregate(pid, tid, nr, dur);
		return 0;
	}
	r = bs_reserve(BS_REC_SYSCALL, sizeof(*r), pid, tid, start);
	if (!r)
		return 0;
	r->dur = dur;
	r->ret = ret;
	r->nr = nr;
	r->_pad = 0;
	bs_submit(r);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(osrt_enter_btf, struct pt_regs *regs, long id)
{
	return on_enter(id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(osrt_exit_btf, struct pt_regs *regs, long ret)
{
	return on_exit(ret);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(osrt_enter_raw, struct pt_regs *regs, long id)
{
	return on_enter(id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(osrt_exit_raw, struct pt_regs *regs, long ret)
{
	return on_exit(ret);
}

/* A thread that dies inside a call (exit_group, a fatal signal) never returns from it. */
static __always_inline int on_task_exit(struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&sys_start, &tid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(osrt_task_exit_btf, struct task_struct *p)
{
	return on_task_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(osrt_task_exit_raw, struct task_struct *p)
{
	return on_task_exit(p);
}
