// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A level over time in fixed-width bins (level_bins.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "level_bins.h"
#include "time_bins.h"

void level_bins__init(struct level_bins *b, __u64 origin, __u64 width)
{
	memset(b, 0, sizeof(*b));
	b->origin = origin;
	b->width = width ? width : 1;
}

static __u32 bin_of(const struct level_bins *b, __u64 ts)
{
	__u64 i = ts > b->origin ? (ts - b->origin) / b->width : 0;

	return i < TIME_BINS_MAX ? (__u32)i : TIME_BINS_MAX - 1;
}

int level_bins__set(struct level_bins *b, __u64 ts, __u64 v)
{
	__u32 i = bin_of(b, ts);
	struct level_bin *last = b->n ? &b->v[b->n - 1] : NULL;

	if (!last || i > last->i) {
		if (b->n == b->cap) {
			/* from 64: a series per process and device, most with few changes */
			if (array__grow_from((void **)&b->v, b->n, &b->cap, sizeof(*b->v), 64))
				return -ENOMEM;
			last = b->n ? &b->v[b->n - 1] : NULL;
		}
		/* The bin starts at the level the previous change left. */
		b->v[b->n] = (struct level_bin){ i, last ? last->end : 0, 0 };
		last = &b->v[b->n++];
	}
	last->end = v;
	if (v > last->max)
		last->max = v;
	if (v > b->peak) {
		b->peak = v;
		b->peak_ts = ts;
	}
	return 0;
}

__u64 level_bins__max(const struct level_bins *b, __u32 a, __u32 e)
{
	__u32 lo = 0, hi = b->n, mid;
	__u64 max;

	while (lo < hi) { /* the first change in bin a or after */
		mid = lo + (hi - lo) / 2;
		if (b->v[mid].i < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	max = lo ? b->v[lo - 1].end : 0;
	for (; lo < b->n && b->v[lo].i < e; lo++)
		if (b->v[lo].max > max)
			max = b->v[lo].max;
	return max;
}

void level_bins__free(struct level_bins *b)
{
	free(b->v);
	memset(b, 0, sizeof(*b));
}
