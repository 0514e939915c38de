// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fixed-width time bins (time_bins.h): the busy time of counters drawn by the exports. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "time_bins.h"

#define NPAGES_MAX (TIME_BINS_MAX / TIME_BINS_PAGE)

void time_bins__init(struct time_bins *b, __u64 origin, __u64 width)
{
	memset(b, 0, sizeof(*b));
	b->origin = origin;
	b->width = width ? width : 1;
}

/* Page entries for pages [0, N) (N <= NPAGES_MAX). */
static int time_bins__pages(struct time_bins *b, __u32 n)
{
	__u32 np = b->npages ? b->npages : 16;
	__u64 **part;
	__s64 *mark;

	if (n <= b->npages)
		return 0;
	while (np < n)
		np *= 2;
	if (np > NPAGES_MAX)
		np = NPAGES_MAX;
	part = realloc(b->part, np * sizeof(*part));
	if (!part)
		return -ENOMEM;
	b->part = part;
	mark = realloc(b->mark, np * sizeof(*mark));
	if (!mark)
		return -ENOMEM;
	b->mark = mark;
	memset(part + b->npages, 0, (np - b->npages) * sizeof(*part));
	memset(mark + b->npages, 0, (np - b->npages) * sizeof(*mark));
	b->npages = np;
	return 0;
}

/* Bin I gains NS (its page's entry exists). */
static int bin_add(struct time_bins *b, __u32 i, __u64 ns, __u64 w)
{
	__u64 **pg = &b->part[i / TIME_BINS_PAGE];

	if (!*pg) {
		*pg = calloc(TIME_BINS_PAGE, sizeof(**pg));
		if (!*pg)
			return -ENOMEM;
		b->alloc++;
	}
	(*pg)[i % TIME_BINS_PAGE] += ns * w;
	return 0;
}

/*
 * Bins [F0, F1] gain a whole width each: page marks for the pages they cover whole (the end
 * mark goes to the page holding F1 + 1, at most b1's).
 */
static int full_add(struct time_bins *b, __u32 f0, __u32 f1, __u64 w)
{
	__u32 p0 = (f0 + TIME_BINS_PAGE - 1) / TIME_BINS_PAGE, p1 = (f1 + 1) / TIME_BINS_PAGE;
	__u32 i;
	int err;

	if (p0 >= p1) { /* no whole page: at most two pages' bins */
		for (i = f0; i <= f1; i++)
			if ((err = bin_add(b, i, b->width, w)))
				return err;
		return 0;
	}
	/* Whole pages [p0, p1): the head before p0 and the tail from p1 bin by bin. */
	for (i = f0; i < p0 * TIME_BINS_PAGE; i++)
		if ((err = bin_add(b, i, b->width, w)))
			return err;
	for (i = p1 * TIME_BINS_PAGE; i <= f1; i++)
		if ((err = bin_add(b, i, b->width, w)))
			return err;
	b->mark[p0] += (__s64)(b->width * w);
	b->mark[p1] -= (__s64)(b->width * w);
	return 0;
}

int time_bins__add(struct time_bins *b, __u64 ts, __u64 dur)
{
	return time_bins__add_weighted(b, ts, dur, 1);
}

int time_bins__add_weighted(struct time_bins *b, __u64 ts, __u64 dur, __u64 w)
{
	__u64 s = ts < b->origin ? b->origin : ts, e = ts + dur, b0, b1, lo, hi;
	int err;

	if (e <= s)
		return 0;
	b0 = (s - b->origin) / b->width;
	b1 = (e - 1 - b->origin) / b->width;
	if (b0 >= TIME_BINS_MAX)
		return 0;
	if (b1 >= TIME_BINS_MAX)
		b1 = TIME_BINS_MAX - 1;
	if ((err = time_bins__pages(b, b1 / TIME_BINS_PAGE + 1)))
		return err;
	lo = b->origin + b1 * b->width;
	hi = lo + b->width;
	if (!w)
		return 0; /* nothing to add (and a bin that gains 0 must not count as used) */
	if (b0 == b1) {
		err = bin_add(b, b0, (e < hi ? e : hi) - s, w);
	} else {
		err = bin_add(b, b0, b->origin + (b0 + 1) * b->width - s, w);
		if (!err)
			err = bin_add(b, b1, (e < hi ? e : hi) - lo, w);
		if (!err && b1 - b0 > 1)
			err = full_add(b, b0 + 1, b1 - 1, w);
	}
	if (err)
		return err;
	if (b1 + 1 > b->used)
		b->used = b1 + 1; /* a bin where an interval ends always gains > 0 */
	return 0;
}

__u32 time_bins__used(const struct time_bins *b)
{
	return b->used;
}

__u64 time_bins__ns(const struct time_bins *b, __u32 i)
{
	const __u64 *pg;
	__s64 marks = 0;

	if (i >= b->used)
		return 0;
	for (__u32 p = 0; p <= i / TIME_BINS_PAGE; p++)
		marks += b->mark[p];
	pg = b->part[i / TIME_BINS_PAGE];
	return (pg ? pg[i % TIME_BINS_PAGE] : 0) + (__u64)marks;
}

double time_bins__ratio(const struct time_bins *b, __u32 i)
{
	return (double)time_bins__ns(b, i) / (double)b->width;
}

void time_bins__free(struct time_bins *b)
{
	for (__u32 p = 0; p < b->npages; p++)
		free(b->part[p]);
	free(b->part);
	free(b->mark);
	b->part = NULL;
	b->mark = NULL;
	b->npages = b->used = b->alloc = 0;
}

void time_bins__iter_init(struct time_bins_iter *it, const struct time_bins *b)
{
	it->i = 0;
	it->n = time_bins__used(b);
	it->marks = 0;
	it->last = -1;
	it->done = 0;
}

int time_bins__step(const struct time_bins *b, struct time_bins_iter *it, double cap, __u64 *ts,
		    double *v)
{
	while (it->i < it->n) {
		__u32 i = it->i, p = i / TIME_BINS_PAGE;
		const __u64 *pg = b->part[p];

		if (i % TIME_BINS_PAGE == 0)
			it->marks += b->mark[p];
		*v = (double)((pg ? pg[i % TIME_BINS_PAGE] : 0) + (__u64)it->marks) / b->width;
		if (cap > 0 && *v > cap)
			*v = cap;
		*ts = b->origin + (__u64)i * b->width;
		/* A page without bins of its own is one value throughout: on to the next page. */
		it->i = pg ? i + 1 : (p + 1) * TIME_BINS_PAGE;
		if (it->i > it->n)
			it->i = it->n;
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
