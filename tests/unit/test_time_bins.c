// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * time_bins: the bins behind the exports' counters (GPU busy, GIL contention), and
 * gil_contention, which fills them from GIL wait records. Hand-computed bins: intervals across
 * bin edges, before the origin, out of order, past the last bin allowed; the counter's points.
 */
#include <stdlib.h>
#include "gil_contention.h"
#include "time_bins.h"
#include "unit.h"

#define W 1000 /* bin width */

static void test_add_across_edges(void)
{
	struct time_bins b;

	time_bins__init(&b, 10000, W);
	/* Out of order, across edges, partly before the origin, empty. */
	ASSERT_EQ(time_bins__add(&b, 12500, 1000), 0, "[2.5, 3.5) bins");
	ASSERT_EQ(time_bins__add(&b, 9000, 1500), 0, "[-1, 0.5): only its part after the origin");
	ASSERT_EQ(time_bins__add(&b, 10999, 1), 0, "the last ns of bin 0");
	ASSERT_EQ(time_bins__add(&b, 11000, 0), 0, "empty");
	ASSERT_EQ(time_bins__add(&b, 5000, 100), 0, "wholly before the origin");
	if (!ASSERT_TRUE(b.n >= 4, "allocated"))
		goto out;
	ASSERT_EQ(b.ns[0], 501, "bin 0");
	ASSERT_EQ(b.ns[1], 0, "bin 1");
	ASSERT_EQ(b.ns[2], 500, "bin 2");
	ASSERT_EQ(b.ns[3], 500, "bin 3");
	ASSERT_EQ(time_bins__used(&b), 4, "bins up to the last non-zero");
	ASSERT_TRUE(time_bins__ratio(&b, 2) == 0.5, "ratio");
	ASSERT_TRUE(time_bins__ratio(&b, b.n + 5) == 0, "ratio past the end");
out:
	time_bins__free(&b);
}

static void test_bounded(void)
{
	struct time_bins b;

	time_bins__init(&b, 0, W);
	ASSERT_EQ(time_bins__add(&b, (__u64)TIME_BINS_MAX * W, 5 * W), 0, "past the last bin");
	ASSERT_EQ(b.n, 0, "nothing allocated for it");
	ASSERT_EQ(time_bins__add(&b, (__u64)(TIME_BINS_MAX - 1) * W, 3 * W), 0, "into the last bin");
	ASSERT_EQ(b.n, TIME_BINS_MAX, "the last bin, no further");
	if (b.n == TIME_BINS_MAX)
		ASSERT_EQ(b.ns[TIME_BINS_MAX - 1], W, "only the last bin's part is counted");
	time_bins__free(&b);
}

/* The points a counter is drawn with: changes only, capped, then back to 0. */
static void test_steps(void)
{
	static const __u64 want_ts[] = { 0, 2 * W, 3 * W };
	static const double want_v[] = { 1.0, 0.5, 0 };
	struct time_bins_iter it;
	struct time_bins b;
	double v;
	__u64 ts;
	int n = 0;

	time_bins__init(&b, 0, W);
	/* Bins: 2.0 (capped to 1), 1.0 (no change), 0.5; nothing after. */
	ASSERT_EQ(time_bins__add(&b, 0, W), 0, "a");
	ASSERT_EQ(time_bins__add(&b, 0, 2 * W), 0, "b");
	ASSERT_EQ(time_bins__add(&b, 2 * W, W / 2), 0, "c");
	time_bins__iter_init(&it, &b);
	while (time_bins__step(&b, &it, 1, &ts, &v)) {
		if (!ASSERT_TRUE(n < 3, "at most three points"))
			break;
		ASSERT_EQ(ts, want_ts[n], "point time");
		ASSERT_TRUE(v == want_v[n], "point value");
		n++;
	}
	ASSERT_EQ(n, 3, "1 (capped) at 0, 0.5 at bin 2, 0 at bin 3");
	time_bins__free(&b);

	/* Nothing at all: one 0 at the origin, so the track shows. */
	time_bins__init(&b, 7, W);
	time_bins__iter_init(&it, &b);
	ASSERT_EQ(time_bins__step(&b, &it, 0, &ts, &v), 1, "a point for an empty counter");
	ASSERT_TRUE(ts == 7 && v == 0, "0 at the origin");
	ASSERT_EQ(time_bins__step(&b, &it, 0, &ts, &v), 0, "and no more");
	time_bins__free(&b);
}

static void test_gil_contention(void)
{
	struct gil_contention *gc = gil_contention__new(W);
	struct bs_gil_wait w = { .h = { .type = BS_REC_GIL_WAIT, .size = sizeof(w), .pid = 10,
					.tid = 11, .ts = 100 },
				 .dur = 1500 };
	struct bs_gil_hold h = { .h = { .type = BS_REC_GIL_HOLD, .size = sizeof(h), .pid = 10,
					.tid = 12, .ts = 100 },
				 .dur = 5000 };
	const struct time_bins *b;
	size_t it = 0;
	__u32 pid = 0;
	int n = 0;

	if (!ASSERT_TRUE(gc, "new"))
		return;
	ASSERT_EQ(gil_contention__add(gc, &w.h, 0), 0, "a wait");
	w.h.tid = 12;
	w.h.ts = 600;
	ASSERT_EQ(gil_contention__add(gc, &w.h, 0), 0, "another thread's wait");
	ASSERT_EQ(gil_contention__add(gc, &h.h, 0), 0, "a hold: not a wait");
	w.h.size = 32;
	ASSERT_EQ(gil_contention__add(gc, &w.h, 0), 0, "a short record: ignored");
	while ((b = gil_contention__next(gc, &it, &pid))) {
		n++;
		ASSERT_EQ(pid, 10, "the process");
		if (!ASSERT_TRUE(b->n >= 3, "bins"))
			break;
		/* [100, 1600) and [600, 2100): 900 + 400 in bin 0, 600 + 1000 in 1, 100 in 2. */
		ASSERT_EQ(b->ns[0], 1300, "bin 0");
		ASSERT_EQ(b->ns[1], 1600, "bin 1");
		ASSERT_EQ(b->ns[2], 100, "bin 2");
		ASSERT_EQ(time_bins__used(b), 3, "three bins");
	}
	ASSERT_EQ(n, 1, "one process");
	gil_contention__free(gc);
}

int main(void)
{
	RUN_TEST(test_add_across_edges);
	RUN_TEST(test_bounded);
	RUN_TEST(test_steps);
	RUN_TEST(test_gil_contention);
	return UNIT_EXIT();
}
