/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A level over time (bytes held: a gauge) in fixed-width bins, for timelines that must not
 * smooth a peak away: each bin where the level changed keeps the highest value it reached
 * there and the value it ended at; a bin without a change holds the value before it. One
 * entry per bin that had a change, so memory follows the changes, not the span.
 *
 * Changes are set in time order. One older than the latest bin with a change counts in that
 * bin (records of different CPUs may come a little out of order: a bin's width off, never
 * lost); one before the origin counts in bin 0, one past TIME_BINS_MAX bins in the last.
 */
#ifndef BPFSIGHT_LEVEL_BINS_H
#define BPFSIGHT_LEVEL_BINS_H

#include <stddef.h>
#include <linux/types.h>

struct level_bin {
	__u32 i;   /* the bin */
	__u64 max; /* the highest level in it (the one it started at included) */
	__u64 end; /* the level at its end */
};

struct level_bins {
	__u64 origin, width;
	struct level_bin *v; /* by bin, ascending */
	__u32 n;
	size_t cap;
	__u64 peak, peak_ts; /* the highest level of all, and when it was first reached */
};

void level_bins__init(struct level_bins *b, __u64 origin, __u64 width);
/* The level is V from TS on. 0, or -ENOMEM. */
int level_bins__set(struct level_bins *b, __u64 ts, __u64 v);
/* The highest level in bins [A, E): the value carried into A and every change in them. */
__u64 level_bins__max(const struct level_bins *b, __u32 a, __u32 e);
void level_bins__free(struct level_bins *b);

#endif /* BPFSIGHT_LEVEL_BINS_H */
