// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu: timer samples of traced threads. A software cpu-clock perf event per CPU runs this
 * program SAMPLE_RATE times a second on whatever runs there; a sample of a traced thread
 * carries its stack as stack.bpf.h reads it (user addresses by frame pointers, Python frames
 * when it holds the GIL). The recorder symbolizes and interns the stacks while the process
 * lives (user/families/cpu/cpu.c, stack_svc.c): nothing is symbolized in here.
 */
#define BS_BLOCK 0x80
#include "stack.bpf.h"
#include "cpu_records.h"

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;

	if (bs_is_target(pid) && tid)
		stack_sample(ctx, pid, tid, BS_REC_CPU_SAMPLE_RAW, bs_wakeup_flags());
	return 0;
}
