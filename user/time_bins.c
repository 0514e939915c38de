// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fixed-width time bins (time_bins.h): the busy time of counters drawn by the exports. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "time_bins.h"

void time_bins__init(struct time_bins *b, __u64 origin, __u64 width)
{
	memset(b, 0, sizeof(*b));
	b->origin = origin;
	b->width = width ? width : 1;
}

static int time_bins__grow(struct time_bins *b, __u64 last)
{
	__u32 n = b->n ? b->n : 64;
	__u64 *v;

	while (n <= last)
		n *= 2;
	v = realloc(b->ns, (size_t)n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + b->n, 0, (size_t)(n - b->n) * sizeof(*v));
	b->ns = v;
	b->n = n;
	return 0;
}

int time_bins__add(struct time_bins *b, __u64 ts, __u64 dur)
{
	__u64 s = ts < b->origin ? b->origin : ts, e = ts + dur, b0, b1;
	int err;

	if (e <= s)
		return 0;
	b0 = (s - b->origin) / b->width;
	b1 = (e - 1 - b->origin) / b->width;
	if (b0 >= TIME_BINS_MAX)
		return 0;
	if (b1 >= TIME_BINS_MAX)
		b1 = TIME_BINS_MAX - 1;
	if (b1 >= b->n && (err = time_bins__grow(b, b1)))
		return err;
	for (__u64 i = b0; i <= b1; i++) {
		__u64 lo = b->origin + i * b->width, hi = lo + b->width;

		b->ns[i] += (e < hi ? e : hi) - (s > lo ? s : lo);
	}
	return 0;
}

__u32 time_bins__used(const struct time_bins *b)
{
	__u32 n = b->n;

	while (n && !b->ns[n - 1])
		n--;
	return n;
}

double time_bins__ratio(const struct time_bins *b, __u32 i)
{
	return i < b->n ? (double)b->ns[i] / (double)b->width : 0;
}

void time_bins__free(struct time_bins *b)
{
	free(b->ns);
	b->ns = NULL;
	b->n = 0;
}

void time_bins__iter_init(struct time_bins_iter *it, const struct time_bins *b)
{
	it->i = 0;
	it->n = time_bins__used(b);
	it->last = -1;
	it->done = 0;
}

int time_bins__step(const struct time_bins *b, struct time_bins_iter *it, double cap, __u64 *ts,
		    double *v)
{
	while (it->i < it->n) {
		*v = time_bins__ratio(b, it->i);
		if (cap > 0 && *v > cap)
			*v = cap;
		*ts = b->origin + (__u64)it->i++ * b->width;
		if (*v != it->last) {
			it->last = *v;
			return 1;
		}
	}
	if (it->done || it->last == 0)
		return 0;
	it->done = 1;
	it->last = *v = 0;
	*ts = b->origin + (__u64)it->n * b->width;
	return 1;
}
