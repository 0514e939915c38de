/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Time spent per fixed-width bin: intervals are added in any order, each bin sums the part of
 * every interval that falls in it. The exports draw counters from them (GPU busy, GIL
 * contention): value = ns in the bin / bin width. Intervals past TIME_BINS_MAX bins are not
 * counted (at 10 ms bins, 46 hours).
 *
 * Bins live in pages of TIME_BINS_PAGE, allocated when an interval starts or ends in them;
 * the whole pages an interval covers only get a difference mark (a page's bins all gain the
 * width). So adding costs at most two pages' bins, memory follows the pages where intervals
 * begin and end (8 KiB each, plus 16 bytes per page up to the latest), and walking the bins
 * skips the pages never allocated: a corrupt trace's hours-long intervals or far timestamps
 * cost neither hours of bins nor their memory.
 */
#ifndef BPFSIGHT_TIME_BINS_H
#define BPFSIGHT_TIME_BINS_H

#include <linux/types.h>

#define TIME_BINS_MAX  (1u << 24)
#define TIME_BINS_PAGE 1024u /* bins per page */

struct time_bins {
	__u64 origin; /* start of bin 0 */
	__u64 width;  /* ns per bin */
	__u64 **part; /* per page: ns of intervals per bin (NULL: no interval began or ended) */
	__s64 *mark;  /* per page: + width from this page on, - after the last page covered */
	__u32 npages; /* entries of part and mark */
	__u32 used;   /* bins up to the last non-zero one */
	__u32 alloc;  /* pages of bins allocated */
};

/* An empty set of bins of WIDTH ns starting at ORIGIN (no allocation yet). */
void time_bins__init(struct time_bins *b, __u64 origin, __u64 width);
/* Add [TS, TS + DUR); the part before the origin is not counted. 0 or -ENOMEM. */
int time_bins__add(struct time_bins *b, __u64 ts, __u64 dur);
/*
 * The same, each ns counting W: a level held over the interval (watts, basis points), whose
 * bin / width is then its mean over the bin. ns * W of a bin must fit a u64.
 */
int time_bins__add_weighted(struct time_bins *b, __u64 ts, __u64 dur, __u64 w);
/* Bins up to the last non-zero one. */
__u32 time_bins__used(const struct time_bins *b);
/* ns of intervals in bin I (0 past the end). */
__u64 time_bins__ns(const struct time_bins *b, __u32 i);
/* Bin I's time over the bin's width (0 past the end): e.g. the average busy streams. */
double time_bins__ratio(const struct time_bins *b, __u32 i);
void time_bins__free(struct time_bins *b);

/*
 * The points where a counter drawn from bins changes: each bin's ratio capped at CAP (0: no
 * cap) where it differs from the previous bin's, then 0 after the last non-zero bin (when
 * the line is not at 0 already). Every writer draws its counters the same way.
 */
struct time_bins_iter {
	__u32 i, n;
	__s64 marks; /* the page marks summed up to bin i's page */
	double last;
	int done;
};

void time_bins__iter_init(struct time_bins_iter *it, const struct time_bins *b);
/* The next point in *TS, *V: 1, or 0 at the end. */
int time_bins__step(const struct time_bins *b, struct time_bins_iter *it, double cap, __u64 *ts,
		    double *v);

#endif /* BPFSIGHT_TIME_BINS_H */
