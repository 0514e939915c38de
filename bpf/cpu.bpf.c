// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu: timer samples of traced threads. A software cpu-clock perf event per CPU runs this
 * program SAMPLE_RATE times a second on whatever runs there; a sample of a traced thread
 * carries its user-space stack, unwound by the kernel through frame pointers
 * (bpf_get_stack, BPF_F_USER_STACK). The recorder symbolizes and interns the stack while the
 * process lives (user/cpu.c, user/stack_intern.c), so nothing is symbolized in here.
 */
#include "common.bpf.h"

struct cpu_scratch {
	struct bs_cpu_sample_raw r;
	__u64 ips[BS_STACK_MAX_FRAMES];
};

/* A sample is bigger than the BPF stack allows: built here, copied out whole. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_scratch);
} cpu_scratch SEC(".maps");

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct cpu_scratch *s;
	__u32 zero = 0;
	long n;

	if (!bs_is_target(id >> 32) || !(__u32)id)
		return 0;
	s = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (!s)
		return 0;
	n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
	if (n < 0)
		n = 0;
	n /= 8;
	if (n > BS_STACK_MAX_FRAMES)
		n = BS_STACK_MAX_FRAMES;
	s->r.h.type = BS_REC_CPU_SAMPLE_RAW;
	s->r.h.size = sizeof(s->r) + n * 8;
	s->r.h.cpu = bpf_get_smp_processor_id();
	s->r.h.pid = id >> 32;
	s->r.h.tid = (__u32)id;
	s->r.h.ts = bpf_ktime_get_ns();
	s->r.nips = n;
	/* Kernel mode: the user stack is where the thread entered the kernel. The context
	 * is read in whole words only (cs shares its word with padding). */
	s->r.flags = (*(volatile __u64 *)((void *)ctx + __builtin_offsetof(
			      struct bpf_perf_event_data, regs.cs)) & 3) ?
			     0 :
			     BS_CPU_KERNEL;
	if (bpf_ringbuf_output(&events, s, sizeof(s->r) + n * 8, bs_wakeup_flags()))
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
	return 0;
}
