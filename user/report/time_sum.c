// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nsys's timing columns, one writer for every summary report. */
#include "stats_math.h"
#include "table.h"
#include "time_sum.h"

void time_sum__set(struct table *t, __u64 count, __u64 total, __u64 min, __u64 max,
		   struct samples *s, long double grand)
{
	/* long double: a percentage of sums near 2^64 must not lose the small rows. */
	table__set_double(t, TIME_SUM_PCT, grand > 0 ? (double)(total * 100.0L / grand) : 0);
	table__set_u64(t, TIME_SUM_TOTAL, total);
	table__set_u64(t, TIME_SUM_COUNT, count);
	table__set_double(t, TIME_SUM_AVG, count ? (double)total / count : 0);
	table__set_double(t, TIME_SUM_MED, samples__median(s));
	table__set_u64(t, TIME_SUM_MIN, min);
	table__set_u64(t, TIME_SUM_MAX, max);
	table__set_double(t, TIME_SUM_STDDEV, samples__stddev(s));
}
