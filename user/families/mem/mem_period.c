// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The period of a loop in a thread's allocations (mem_period.h). */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem_period.h"

/* Periods tried at most, and positions each is checked at (evenly spread). */
#define MAX_CANDIDATES 32
#define MAX_CHECKS     8192

/*
 * A size's repeats: where it was last seen, its last gap and how many gaps in a row were
 * that gap, and the longest such run and its gap.
 */
struct size_seen {
	__u64 last, gap, run;
	__u64 best_gap, best_run;
	__u64 count;
};

/* A candidate period, the sizes that vote for it and the one that ran longest at it. */
struct candidate {
	size_t period;
	__u64 votes;
	__u64 anchor, anchor_run;
};

/* Whether SIZES has V within SLACK of AT. */
static int near(const __u64 *sizes, size_t n, size_t at, size_t slack, __u64 v)
{
	size_t lo = at > slack ? at - slack : 0;

	for (size_t j = lo; j < n && j <= at + slack; j++)
		if (sizes[j] == v)
			return 1;
	return 0;
}

/* The share of positions i (of up to MAX_CHECKS) whose size comes again about P later. */
static double match(const __u64 *sizes, size_t n, size_t p)
{
	size_t span = n - p, step = span > MAX_CHECKS ? span / MAX_CHECKS : 1, tried = 0, same = 0;
	size_t slack = p / 16 < MEM_PERIOD_SLACK ? p / 16 : MEM_PERIOD_SLACK;

	for (size_t i = 0; i < span; i += step, tried++)
		same += near(sizes, n, i + p, slack, sizes[i]);
	return tried ? (double)same / tried : 0;
}

static int by_votes(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->votes != y->votes)
		return x->votes > y->votes ? -1 : 1;
	return x->period < y->period ? -1 : x->period > y->period;
}

/*
 * The gaps sizes repeat at: a size seen once a pass repeats at the period every time. Each
 * size votes for the gap of its longest run of equal gaps, by its length (what came before
 * the loop, a pass whose allocations came in another order, or a size made at several
 * points of a pass, breaks runs).
 */
static size_t candidates(const __u64 *sizes, size_t n, struct candidate *out)
{
	struct hmap *seen = hmap__new(sizeof(struct size_seen)), *votes;
	struct candidate *all;
	struct size_seen *s;
	size_t it = 0, nc = 0, nall = 0;
	struct candidate *v;
	struct hkey key;

	if (!seen)
		return 0;
	for (size_t i = 0; i < n; i++) {
		s = hmap__get(seen, (struct hkey){ sizes[i], 0 }, 1);
		if (!s)
			break;
		if (s->count++) {
			__u64 gap = i - s->last;

			s->run = gap == s->gap ? s->run + 1 : 1;
			s->gap = gap;
			if (s->run > s->best_run) {
				s->best_run = s->run;
				s->best_gap = gap;
			}
		}
		s->last = i;
	}
	votes = hmap__new(sizeof(struct candidate));
	while (votes && (s = hmap__next(seen, &it, &key)))
		if (s->best_run >= 2 &&
		    (v = hmap__get(votes, (struct hkey){ s->best_gap, 0 }, 1))) {
			v->period = s->best_gap;
			v->votes += s->best_run;
			if (s->best_run > v->anchor_run) {
				v->anchor_run = s->best_run;
				v->anchor = key.a;
			}
		}
	it = 0;
	all = votes ? calloc(hmap__count(votes) + 1, sizeof(*all)) : NULL;
	while (all && (v = hmap__next(votes, &it, &key)))
		all[nall++] = *v;
	if (nall)
		qsort(all, nall, sizeof(*all), by_votes);
	for (nc = 0; nc < nall && nc < MAX_CANDIDATES; nc++)
		out[nc] = all[nc];
	free(all);
	hmap__free(votes);
	hmap__free(seen);
	return nc;
}

int mem_period__find(const __u64 *sizes, size_t n, size_t min_passes, struct mem_period *out)
{
	struct candidate c[MAX_CANDIDATES];
	size_t nc = candidates(sizes, n, c), best = MAX_CANDIDATES;
	double score[MAX_CANDIDATES], top = 0;

	for (size_t i = 0; i < nc; i++) {
		score[i] = c[i].period && c[i].period * min_passes <= n
				   ? match(sizes, n, c[i].period)
				   : 0;
		if (score[i] > top)
			top = score[i];
	}
	if (top < MEM_PERIOD_MATCH)
		return -ENOENT;
	/* Multiples of the period match as well: the smallest that matches about the best. */
	for (size_t i = 0; i < nc; i++)
		if (score[i] >= top - 0.02 &&
		    (best == MAX_CANDIDATES || c[i].period < c[best].period))
			best = i;
	*out = (struct mem_period){ c[best].period, c[best].anchor };
	return 0;
}
