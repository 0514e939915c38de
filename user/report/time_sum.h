/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nsys's timing columns, shared by every "summary" report (osrt_sum, cuda_api_sum, nccl_sum,
 * ...): time_pct, total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, in that order,
 * the first columns of the table.
 */
#ifndef BPFSIGHT_TIME_SUM_H
#define BPFSIGHT_TIME_SUM_H

#include <linux/types.h>
#include "table.h"

struct samples;

enum time_sum_col {
	TIME_SUM_PCT,
	TIME_SUM_TOTAL,
	TIME_SUM_COUNT,
	TIME_SUM_AVG,
	TIME_SUM_MED,
	TIME_SUM_MIN,
	TIME_SUM_MAX,
	TIME_SUM_STDDEV,
	TIME_SUM_NCOLS, /* a report's own columns follow: its enum starts here */
};

/*
 * Their declarations, the first entries of a report's struct table_col array; COUNT_TITLE is
 * nsys's title for what is counted ("Num Calls", "Instances" for kernels and ranges). The
 * total, count, average and max stay where the width is short.
 */
#define TIME_SUM_COLS(count_title)                                                                 \
	[TIME_SUM_PCT] = { "time_pct", "Time (%)", TABLE_DOUBLE },                                 \
	[TIME_SUM_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64 },                           \
	[TIME_SUM_COUNT] = { "count", count_title, TABLE_U64 },                                    \
	[TIME_SUM_AVG] = { "avg_ns", "Avg (ns)", TABLE_DOUBLE },                                   \
	[TIME_SUM_MED] = { "med_ns", "Med (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },                  \
	[TIME_SUM_MIN] = { "min_ns", "Min (ns)", TABLE_U64, TABLE_COL_MINOR },                     \
	[TIME_SUM_MAX] = { "max_ns", "Max (ns)", TABLE_U64 },                                      \
	[TIME_SUM_STDDEV] = { "stddev_ns", "StdDev (ns)", TABLE_DOUBLE, TABLE_COL_MINOR }

/*
 * Fill them in T's current row for one group; GRAND = total_ns over all rows (for time_pct),
 * a long double: the totals of a corrupt or hand-made trace may sum past 2^64.
 */
void time_sum__set(struct table *t, __u64 count, __u64 total, __u64 min, __u64 max,
		   struct samples *s, long double grand);

#endif /* BPFSIGHT_TIME_SUM_H */
