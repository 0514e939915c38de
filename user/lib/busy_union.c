// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The union of a device's kernel intervals, counted incrementally (busy_union.h). */
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "busy_union.h"

/* The first span ending at or after T (spans are disjoint and sorted, so ends are too). */
static size_t first_ending_from(const struct busy_union *u, __u64 t)
{
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->spans[mid].end < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Forget spans that ended more than BUSY_UNION_KEEP_NS before the latest end. */
static void forget_old(struct busy_union *u)
{
	size_t k;

	if (u->latest_end <= BUSY_UNION_KEEP_NS)
		return;
	k = first_ending_from(u, u->latest_end - BUSY_UNION_KEEP_NS);
	if (!k)
		return;
	memmove(u->spans, u->spans + k, (u->n - k) * sizeof(*u->spans));
	u->n -= k;
}

int busy_union__add(struct busy_union *u, __u64 start, __u64 end)
{
	size_t i, j;
	__u64 covered = 0;

	if (end <= start)
		return 0;
	/* Spans i..j-1 touch [start, end]: they merge with it into one. */
	i = first_ending_from(u, start);
	for (j = i; j < u->n && u->spans[j].start <= end; j++) {
		__u64 s = u->spans[j].start > start ? u->spans[j].start : start;
		__u64 e = u->spans[j].end < end ? u->spans[j].end : end;

		if (e > s)
			covered += e - s;
	}
	u->busy_ns += end - start - covered;
	if (j > i) {
		if (u->spans[i].start < start)
			start = u->spans[i].start;
		if (u->spans[j - 1].end > end)
			end = u->spans[j - 1].end;
		memmove(u->spans + i + 1, u->spans + j, (u->n - j) * sizeof(*u->spans));
		u->n -= j - i - 1;
	} else {
		/* from 16: a union per stream or device, most of them a few spans apart */
		if (array__grow_from((void **)&u->spans, u->n, &u->cap, sizeof(*u->spans), 16))
			return -1;
		memmove(u->spans + i + 1, u->spans + i, (u->n - i) * sizeof(*u->spans));
		u->n++;
	}
	u->spans[i] = (struct busy_span){ start, end };
	if (end > u->latest_end)
		u->latest_end = end;
	forget_old(u);
	return 0;
}

void busy_union__free(struct busy_union *u)
{
	free(u->spans);
	memset(u, 0, sizeof(*u));
}
