/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The boundaries mem_leaks compares each site's live bytes at, per device of a mem_log: its
 * process's steps (steps.h) where it has MEM_GROW_MIN_STEPS of them, else the passes of its
 * loop (mem_period.h), else MEM_GROW_WINDOWS windows of its allocations; those up to its last
 * allocation made before stacks were taken dropped. Computed by mem_leaks for stats FILE and
 * once at render time for the server (mem_rows.c: `mem_leak_steps` rows), one code for both.
 */
#ifndef BPFSIGHT_MEM_LEAK_BOUNDS_H
#define BPFSIGHT_MEM_LEAK_BOUNDS_H

#include <stddef.h>
#include <linux/types.h>

struct mem_log;
struct steps;

/* At most this many boundaries a device: more steps are taken a group at a time. */
#define MEM_MAX_BOUNDS 500

/* What a device's boundaries are the ends of. */
enum mem_bound_per {
	MEM_PER_WINDOW, /* a tenth of its allocations */
	MEM_PER_STEP,	/* its process's steps (steps.h) */
	MEM_PER_LOOP,	/* passes of its loop (mem_period.h) */
};

/* [per]: "window", "step", "loop"; and "windows", "steps", "passes". */
extern const char *const mem_per_names[];
extern const char *const mem_per_plural[];

/* A device's boundaries: bounds[0..k], each interval GROUP steps long (1 for windows). */
struct mem_dev_bounds {
	__u64 *bounds;
	__u32 k, group;
	enum mem_bound_per per;
};

/* The boundaries of each device of L ([l->ndevs]), STEPS finished: NULL when out of memory. */
struct mem_dev_bounds *mem_leak_bounds__of(const struct mem_log *l, const struct steps *steps);
void mem_leak_bounds__free(struct mem_dev_bounds *b, size_t ndevs);
/* The first boundary of B at or after TS (k + 1: none). */
__u32 mem_leak_bounds__at(const struct mem_dev_bounds *b, __u64 ts);

#endif /* BPFSIGHT_MEM_LEAK_BOUNDS_H */
