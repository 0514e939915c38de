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

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_sched_wakeup)
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

/* uprobe_multi links (what bpfsight attaches, user/uprobe_multi.c). */
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
