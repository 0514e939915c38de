/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The period of a loop in one thread's allocations: a training or inference loop makes the
 * same allocations, of the same sizes in the same order, at every pass, so its sizes repeat
 * every P allocations. mem_leaks takes a pass of the loop as its step where a process has no
 * steps of its own (torch's, --steps'): live bytes compared at the same point of each pass
 * grow by what a pass keeps, whatever the loop frees in between.
 */
#ifndef BPFSIGHT_MEM_PERIOD_H
#define BPFSIGHT_MEM_PERIOD_H

#include <stddef.h>
#include <linux/types.h>

/*
 * A pass matches the next when this share of its allocations or more have their size again
 * about P allocations later: within P / 16 either way, and MEM_PERIOD_SLACK at most (a
 * DataLoader's batch comes in at another point of each step: the allocations after it move
 * by a few).
 */
#define MEM_PERIOD_MATCH 0.8
#define MEM_PERIOD_SLACK 8

struct mem_period {
	size_t period; /* allocations a pass */
	__u64 anchor;  /* a size allocated once a pass: where each pass begins */
};

/*
 * SIZES[0..N): one thread's allocations, in order. The loop's period (allocations a pass),
 * found among the gaps between a size's repeats and checked over the whole sequence: the
 * smallest of those that match best, and the size that repeated at it longest as its anchor.
 * 0, or -ENOENT when none matches MEM_PERIOD_MATCH of the sequence or fewer than MIN_PASSES
 * passes fit in it (or out of memory).
 */
int mem_period__find(const __u64 *sizes, size_t n, size_t min_passes, struct mem_period *out);

#endif /* BPFSIGHT_MEM_PERIOD_H */
