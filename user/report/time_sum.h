/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nsys's timing columns, shared by every "summary" report (osrt_sum, cuda_api_sum, nccl_sum,
 * ...): time_pct, total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, in that order.
 */
#ifndef BPFSIGHT_TIME_SUM_H
#define BPFSIGHT_TIME_SUM_H

#include <linux/types.h>

struct samples;
struct table;

#define TIME_SUM_NCOLS 8

/* Add the timing columns to T; their ids go to C[0..TIME_SUM_NCOLS). */
void time_sum__cols(struct table *t, int *c);
/* The same, with nsys's title for what is counted ("Instances" for kernels and ranges). */
void time_sum__cols_counting(struct table *t, int *c, const char *count_title);
/*
 * Fill them in T's current row for one group; GRAND = total_ns over all rows (for time_pct),
 * a long double: the totals of a corrupt or hand-made trace may sum past 2^64.
 */
void time_sum__set(struct table *t, const int *c, __u64 count, __u64 total, __u64 min, __u64 max,
		   struct samples *s, long double grand);

#endif /* BPFSIGHT_TIME_SUM_H */
