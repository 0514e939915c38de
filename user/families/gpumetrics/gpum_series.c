// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A device's running totals at checkpoints, and a span's energy and means (gpum_series.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "gpum_series.h"

static const enum gpum_metric source[GS_N] = {
	[GS_POWER] = GPUM_POWER,      [GS_SM] = GPUM_SM_ACTIVE,	 [GS_TENSOR] = GPUM_TENSOR_ACTIVE,
	[GS_DRAM] = GPUM_DRAM_ACTIVE, [GS_UTIL] = GPUM_GPU_UTIL,
};

/* Every other checkpoint goes (the latest stays): half the memory, twice the spacing. */
static void thin(struct gpum_series *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i += 2)
		s->p[k++] = s->p[i];
	if (s->p[k - 1].ts != s->p[s->n - 1].ts)
		s->p[k++] = s->p[s->n - 1];
	s->n = k;
	s->spacing = k > 1 ? 2 * (s->p[k - 1].ts - s->p[0].ts) / (k - 1) : s->spacing * 2;
}

static int keep(struct gpum_series *s)
{
	if (s->n && s->spacing && s->now.ts - s->p[s->n - 1].ts < s->spacing)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct gpum_point *p;

		if (cap > GPUM_SERIES_MAX) {
			thin(s);
			return keep(s);
		}
		p = realloc(s->p, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->p = p;
		s->cap = cap;
	}
	s->p[s->n++] = s->now;
	return 0;
}

/*
 * Metric K's value V covers (FROM, now]: the checkpoints kept inside that window get their
 * share, so that a span inside it (a step shorter than GPM's period) has it too.
 */
static void spread(struct gpum_series *s, int k, __u64 from, double v)
{
	for (size_t i = s->n; i-- > 0 && s->p[i].ts > from;) {
		s->p[i].sum[k] += v * (double)(s->p[i].ts - from);
		s->p[i].covered[k] += (double)(s->p[i].ts - from);
	}
}

int gpum_series__add(struct gpum_series *s, __u64 ts, __u64 have, const __u64 *val)
{
	__u64 dt;

	if (!s->started) {
		memset(&s->now, 0, sizeof(s->now));
		s->now.energy = NAN;
		s->started = 1;
		s->first = ts;
	} else if (ts < s->now.ts) {
		return 0; /* out of order: a corrupt file's; the totals only grow */
	} else {
		/* Each metric's value covers the time since it was read last (not after a gap). */
		for (int k = 0; k < GS_N; k++) {
			/* a first value: since the first sample (GPM's first read only primes) */
			__u64 from = s->last[k] ? s->last[k] : s->first;
			double v;

			if (!(have & GPUM_BIT(source[k])) || (dt = ts - from) > GPUM_SERIES_GAP_NS)
				continue;
			v = gpum_value(source[k], val[source[k]]);
			s->now.sum[k] += v * (double)dt;
			s->now.covered[k] += (double)dt;
			spread(s, k, from, v);
		}
	}
	for (int k = 0; k < GS_N; k++)
		if (have & GPUM_BIT(source[k]))
			s->last[k] = ts;
	s->now.ts = ts;
	if (have & GPUM_BIT(GPUM_ENERGY)) {
		s->now.energy = (double)val[GPUM_ENERGY];
		s->has_energy = 1;
	}
	return keep(s);
}

/* The totals at T, interpolated between the checkpoints around it (clamped at the ends). */
static void at(const struct gpum_series *s, __u64 t, struct gpum_point *out)
{
	const struct gpum_point *last = &s->now, *a, *b;
	size_t lo = 0, hi = s->n;
	double f;

	if (!s->n || t <= s->p[0].ts) {
		*out = s->n ? s->p[0] : *last;
		return;
	}
	if (t >= last->ts) {
		*out = *last;
		return;
	}
	while (hi - lo > 1) { /* the last checkpoint at or before T */
		size_t mid = (lo + hi) / 2;

		if (s->p[mid].ts <= t)
			lo = mid;
		else
			hi = mid;
	}
	a = &s->p[lo];
	b = lo + 1 < s->n ? &s->p[lo + 1] : last;
	f = b->ts > a->ts ? (double)(t - a->ts) / (double)(b->ts - a->ts) : 0;
	out->ts = t;
	out->energy = isnan(a->energy) ? NAN : a->energy + f * (b->energy - a->energy);
	for (int k = 0; k < GS_N; k++) {
		out->sum[k] = a->sum[k] + f * (b->sum[k] - a->sum[k]);
		out->covered[k] = a->covered[k] + f * (b->covered[k] - a->covered[k]);
	}
}

void gpum_series__span(const struct gpum_series *s, __u64 a, __u64 b, struct gpum_span *out)
{
	struct gpum_point pa, pb;
	__u64 lo, hi;

	memset(out, 0, sizeof(*out));
	out->energy_mj = -1;
	for (int k = 0; k < GS_N; k++)
		out->mean[k] = -1;
	if (!s->started || b <= a)
		return;
	at(s, a, &pa);
	at(s, b, &pb);
	if (s->has_energy && !isnan(pa.energy) && !isnan(pb.energy)) {
		out->energy_mj = pb.energy - pa.energy;
		lo = a > pa.ts ? a : pa.ts;
		hi = b < pb.ts ? b : pb.ts;
		out->covered_ns = hi > lo ? hi - lo : 0;
	}
	for (int k = 0; k < GS_N; k++)
		if (pb.covered[k] - pa.covered[k] > 0)
			out->mean[k] = (pb.sum[k] - pa.sum[k]) / (pb.covered[k] - pa.covered[k]);
}

void gpum_series__free(struct gpum_series *s)
{
	free(s->p);
	memset(s, 0, sizeof(*s));
}
