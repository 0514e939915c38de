/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Timer sampling: a software cpu-clock perf event on every online CPU, each running one BPF
 * program (perf_event section). The cpu family samples the traced threads' stacks with it
 * (--sample-rate), the gil family the GIL's holder while others wait for it (docs/GIL.md).
 */
#ifndef BPFSIGHT_PERF_TIMERS_H
#define BPFSIGHT_PERF_TIMERS_H

#include <linux/types.h>

struct bpf_link;
struct bpf_program;

struct perf_timers {
	struct bpf_link **links; /* one per CPU that has an event */
	int n;
};

/*
 * PROG on every online CPU, HZ times a second (the kernel's frequency mode) or, with HZ 0,
 * every PERIOD_NS of the CPU's clock (a fixed period: every sample stands for the same time).
 * 0, or a negative errno (said on stderr with WHO); what opened is closed then.
 */
int perf_timers__open(struct perf_timers *t, struct bpf_program *prog, __u32 hz, __u64 period_ns,
		      const char *who);
/* No more samples; T may be zeroed or opened. */
void perf_timers__close(struct perf_timers *t);

#endif /* BPFSIGHT_PERF_TIMERS_H */
