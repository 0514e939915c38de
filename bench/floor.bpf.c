// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of the overhead benchmark: empty programs on the attach points bpfsight's
 * families use. Whatever a family costs beyond these is its own work; these cost what any
 * BPF tracer pays to be called at all (the tracepoint slow path, the uprobe trap, the
 * single-step, the return-address hijack of a uretprobe). bench/floor.c attaches them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The same program types as osrt and sched: tp_btf. */
SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch)
{
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(floor_sched_waking)
{
	return 0;
}

/* What the mem family samples resident memory on: every change of a process's RSS counters. */
SEC("tp_btf/rss_stat")
int BPF_PROG(floor_rss_stat)
{
	return 0;
}

/*
 * What the mem family samples resident memory on instead (floor --page-faults PERIOD): a
 * page-fault software event per CPU, the program run once per PERIOD faults.
 */
SEC("perf_event")
int floor_page_fault(struct bpf_perf_event_data *ctx)
{
	return 0;
}

/* Perf-event uprobes (what bpftrace and libbpf 1.1 attach). */
SEC("uprobe")
int floor_uprobe(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_uretprobe(struct pt_regs *ctx)
{
	return 0;
}

/* uprobe_multi links (what bpfsight attaches, user/uprobe/uprobe_multi.c). */
SEC("uprobe")
int floor_multi_entry(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_multi_return(struct pt_regs *ctx)
{
	return 0;
}

SEC("usdt")
int floor_usdt(struct pt_regs *ctx)
{
	return 0;
}

/*
 * Probe bodies (floor --body NAME): entry and return uprobe_multi programs of which one does
 * one thing, once per call, where bpfsight's uprobe programs (bpf/ucall.bpf.h) do it, so that
 * the kernel's BPF stats price each part of them (bench/bench_parts.py). Names stay under 16
 * characters, the length the kernel keeps.
 */
__u64 sink;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* bpfsight's default */
} body_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} body_task SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} body_slots SEC(".maps");

static __always_inline void body_task_storage(void)
{
	__u64 *v = bpf_task_storage_get(&body_task, bpf_get_current_task_btf(), 0,
					BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (v)
		*v += 1;
}

static __always_inline void body_array(void)
{
	__u32 k = sink & 1023;
	__u64 *v = bpf_map_lookup_elem(&body_slots, &k);

	if (v)
		*v += 1;
}

/* A bs_ucall-sized record (152 bytes), as ucall_return reserves and submits it. */
static __always_inline void body_ringbuf(void)
{
	__u64 *r = bpf_ringbuf_reserve(&body_rb, 152, 0);

	if (r) {
		r[0] = sink;
		bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	}
}

static __always_inline void body_read(struct pt_regs *ctx, __u32 words)
{
	__u64 v[6] = {};

	bpf_probe_read_user(v, words * 8, (void *)PT_REGS_SP(ctx));
	sink = v[0];
}

/* The part runs once per call: at entry (BODY_AT_ENTRY) or at return (BODY_AT_RETURN). */
#define BODY(name, entry_stmt, return_stmt)                                                        \
	SEC("uprobe") int b_##name##_ent(struct pt_regs *ctx)                                      \
	{                                                                                          \
		entry_stmt;                                                                        \
		return 0;                                                                          \
	}                                                                                          \
	SEC("uretprobe") int b_##name##_ret(struct pt_regs *ctx)                                   \
	{                                                                                          \
		return_stmt;                                                                       \
		return 0;                                                                          \
	}
#define BODY_AT_ENTRY(name, stmt)  BODY(name, stmt, )
#define BODY_AT_RETURN(name, stmt) BODY(name, , stmt)

BODY(empty, , )
BODY_AT_ENTRY(ktime, sink = bpf_ktime_get_ns())
BODY_AT_ENTRY(pid, sink = bpf_get_current_pid_tgid())
BODY_AT_ENTRY(cookie, sink = bpf_get_attach_cookie(ctx))
BODY_AT_ENTRY(task, sink = bpf_get_current_task_btf()->pid)
BODY_AT_ENTRY(tstore, body_task_storage())
BODY_AT_ENTRY(array, body_array())
BODY_AT_RETURN(query, sink = bpf_ringbuf_query(&body_rb, BPF_RB_AVAIL_DATA))
BODY_AT_RETURN(rbuf, body_ringbuf())
BODY_AT_RETURN(read8, body_read(ctx, 1))
BODY_AT_ENTRY(read48, body_read(ctx, 6))
