// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nsys's timing columns, one writer for every summary report. */
#include "stats_math.h"
#include "table.h"
#include "time_sum.h"

void time_sum__cols(struct table *t, int *c)
{
	time_sum__cols_counting(t, c, "Num Calls");
}

void time_sum__cols_counting(struct table *t, int *c, const char *count_title)
{
	c[0] = table__add_col(t, "time_pct", "Time (%)", TABLE_DOUBLE);
	c[1] = table__add_col(t, "total_ns", "Total Time (ns)", TABLE_U64);
	c[2] = table__add_col(t, "count", count_title, TABLE_U64);
	c[3] = table__add_col(t, "avg_ns", "Avg (ns)", TABLE_DOUBLE);
	c[4] = table__add_col(t, "med_ns", "Med (ns)", TABLE_DOUBLE);
	c[5] = table__add_col(t, "min_ns", "Min (ns)", TABLE_U64);
	c[6] = table__add_col(t, "max_ns", "Max (ns)", TABLE_U64);
	c[7] = table__add_col(t, "stddev_ns", "StdDev (ns)", TABLE_DOUBLE);
	/* Left out first where the width is short: the total, count, average and max stay. */
	table__set_flags(t, c[4], TABLE_COL_MINOR);
	table__set_flags(t, c[5], TABLE_COL_MINOR);
	table__set_flags(t, c[7], TABLE_COL_MINOR);
}

void time_sum__set(struct table *t, const int *c, __u64 count, __u64 total, __u64 min, __u64 max,
		   struct samples *s, long double grand)
{
	/* long double: a percentage of sums near 2^64 must not lose the small rows. */
	table__set_double(t, c[0], grand > 0 ? (double)(total * 100.0L / grand) : 0);
	table__set_u64(t, c[1], total);
	table__set_u64(t, c[2], count);
	table__set_double(t, c[3], count ? (double)total / count : 0);
	table__set_double(t, c[4], samples__median(s));
	table__set_u64(t, c[5], min);
	table__set_u64(t, c[6], max);
	table__set_double(t, c[7], samples__stddev(s));
}
