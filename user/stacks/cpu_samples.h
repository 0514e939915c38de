/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CPU samples of a trace counted per (stack, kernel or user): what the folded and svg
 * exports and the report's flame graph draw. Grows with distinct stacks, not samples.
 */
#ifndef BPFSIGHT_CPU_SAMPLES_H
#define BPFSIGHT_CPU_SAMPLES_H

#include <stddef.h>
#include <linux/types.h>

struct bs_hdr;
struct cpu_samples;
struct event;

struct cpu_samples *cpu_samples__new(void);
void cpu_samples__free(struct cpu_samples *c);
/* Count REC when it is a cpu sample. 0, or -ENOMEM. */
/* REC's event EV (NULL: none) when its kind's style says it is a sample of a stack. */
int cpu_samples__is_sample(const struct bs_hdr *rec, const struct event *ev);
int cpu_samples__add(struct cpu_samples *c, const struct bs_hdr *rec, const struct event *ev);
/* Add N (a weight: ns of an event with that stack) to (STACK_ID, KERNEL). 0, or -ENOMEM. */
int cpu_samples__add_n(struct cpu_samples *c, __u32 stack_id, int kernel, __u64 n);
/* Iterate (start with *it = 0): 1 and the next (stack id, kernel, count), 0 at the end. */
int cpu_samples__next(const struct cpu_samples *c, size_t *it, __u32 *stack_id, int *kernel,
		      __u64 *count);

/*
 * The CPU time a sample stands for in a recording whose header's options are OPTIONS
 * ("... sample_rate=99": the cpu family's): 1 s / the rate, the default 99 Hz's for a trace
 * from before the option (or NULL).
 */
__u64 cpu_samples__period_ns(const char *options);

#endif /* BPFSIGHT_CPU_SAMPLES_H */
