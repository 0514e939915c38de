// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Weighted samples for the stats reports; see stats_math.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "stats_math.h"

int samples__add(struct samples *s, double value, __u64 weight)
{
	if (!weight)
		return 0;
	/* from 64: a report keeps samples per row, and most rows have few */
	if (array__grow_from((void **)&s->v, s->n, &s->cap, sizeof(*s->v), 64))
		return -ENOMEM;
	s->v[s->n].value = value;
	s->v[s->n].weight = weight;
	s->n++;
	s->count += weight;
	s->sorted = 0;
	return 0;
}

double samples__mean(const struct samples *s)
{
	long double sum = 0;
	size_t i;

	if (!s->count)
		return 0;
	for (i = 0; i < s->n; i++)
		sum += (long double)s->v[i].value * s->v[i].weight;
	return (double)(sum / s->count);
}

/*
 * Newton's square root: the static link has no libm, and one root per report row is cheap.
 * From y >= sqrt(x) the iteration decreases monotonically, so stop when it stops decreasing.
 */
static long double sqrt_ld(long double x)
{
	long double y, next;
	int i;

	if (!(x > 0))
		return 0;
	y = x > 1 ? x : 1;
	for (i = 0; i < 2000; i++) {
		next = (y + x / y) / 2;
		if (next >= y)
			break;
		y = next;
	}
	return y;
}

double samples__stddev(const struct samples *s)
{
	long double mean = samples__mean(s), sum = 0, d;
	size_t i;

	if (!s->count)
		return 0;
	/* Two passes: the one-pass sum-of-squares formula cancels badly at ns magnitudes. */
	for (i = 0; i < s->n; i++) {
		d = s->v[i].value - mean;
		sum += d * d * s->v[i].weight;
	}
	return (double)sqrt_ld(sum / s->count);
}

static int sample_cmp(const void *a, const void *b)
{
	double x = ((const struct sample *)a)->value, y = ((const struct sample *)b)->value;

	return (x > y) - (x < y);
}

/* The value at 0-based RANK among the COUNT weighted samples (sorted). */
static double samples__at(const struct samples *s, __u64 rank)
{
	__u64 seen = 0;
	size_t i;

	for (i = 0; i < s->n; i++) {
		seen += s->v[i].weight;
		if (rank < seen)
			return s->v[i].value;
	}
	return s->n ? s->v[s->n - 1].value : 0;
}

double samples__percentile(struct samples *s, double p)
{
	double pos, frac, lo, hi;
	__u64 rank;

	if (!s->count)
		return 0;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), sample_cmp);
		s->sorted = 1;
	}
	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	/* Linear interpolation between closest ranks (numpy's default, nsys's median). */
	pos = p / 100.0 * (double)(s->count - 1);
	rank = (__u64)pos;
	frac = pos - (double)rank;
	lo = samples__at(s, rank);
	if (frac == 0 || rank + 1 >= s->count)
		return lo;
	hi = samples__at(s, rank + 1);
	return lo + (hi - lo) * frac;
}

double samples__median(struct samples *s)
{
	return samples__percentile(s, 50);
}

void samples__free(struct samples *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}
