// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A thread's launching calls by time, for the launch join (see shim_join_calls.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shim_join_calls.h"

#define MIN_CAP	 64
#define MAX_SCAN 4096 /* calls looked at past the first that ends after T0 */

static inline struct jcall *at(const struct jthread *t, __u32 k)
{
	return &t->c[(t->head + k) & (t->cap - 1)];
}

static inline __u64 end_of(const struct jcall *c)
{
	return c->ts + c->dur;
}

/* Re-lay the ring into CAP slots (>= n), oldest first. */
static int resize(struct jthread *t, __u32 cap)
{
	struct jcall *c = malloc((size_t)cap * sizeof(*c));

	if (!c)
		return -ENOMEM;
	for (__u32 k = 0; k < t->n; k++)
		c[k] = *at(t, k);
	free(t->c);
	t->c = c;
	t->cap = cap;
	t->head = 0;
	return 0;
}

int jthread__add(struct jthread *t, __u64 ts, __u64 dur, __u16 depth)
{
	struct jcall call = { .ts = ts,
			      .dur = dur > 0xffffffffull ? 0xffffffffu : dur,
			      .depth = depth };
	__u64 end = end_of(&call);
	__u32 k;

	if (t->n == t->cap && resize(t, t->cap ? 2 * t->cap : MIN_CAP))
		return -ENOMEM;
	/* Almost always the last: only calls read from another ring come out of order. */
	for (k = t->n; k > 0 && end_of(at(t, k - 1)) > end; k--)
		*at(t, k) = *at(t, k - 1);
	*at(t, k) = call;
	t->n++;
	t->appended++;
	return 0;
}

int jthread__pop(struct jthread *t)
{
	__u64 end;

	if (!t->n)
		return 0;
	end = end_of(at(t, 0));
	if (end > t->forgot_end)
		t->forgot_end = end;
	t->head = (t->head + 1) & (t->cap - 1);
	t->n--;
	return 1;
}

__u32 jthread__trim(struct jthread *t, __u64 before)
{
	__u32 dropped = 0;

	while (t->n && end_of(at(t, 0)) < before)
		dropped += jthread__pop(t);
	/* A burst must not keep its memory for the thread's life. */
	if (t->cap > MIN_CAP && t->n <= t->cap / 4)
		resize(t, t->cap / 2);
	return dropped;
}

__u64 jthread__find(const struct jthread *t, __u64 t0, __u64 t1)
{
	__u32 lo = 0, hi = t->n, bound = 0x10000, scanned = 0;
	__u64 best = 0;

	/* The first call ending at or after t0: the calls before it cannot overlap. */
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (end_of(at(t, mid)) < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * Calls of one thread nest and come innermost first: past a call, only calls shallower
	 * than it can still overlap (they contain it). The last overlapping one is the outermost.
	 */
	for (__u32 k = lo; k < t->n && bound && scanned++ < MAX_SCAN; k++) {
		const struct jcall *c = at(t, k);

		if (c->depth >= bound)
			continue;
		if (c->ts <= t1)
			best = c->ts;
		bound = c->depth;
	}
	return best;
}

void jthread__free(struct jthread *t)
{
	free(t->c);
	memset(t, 0, sizeof(*t));
}
