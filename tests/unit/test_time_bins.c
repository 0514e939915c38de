// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * time_bins: the bins behind the exports' counters (GPU busy, GIL contention), and
 * gil_contention, which fills them from GIL wait records. Hand-computed bins: intervals across
 * bin edges, before the origin, out of order, past the last bin allowed; the counter's points.
 */
#include <stdlib.h>
#include <string.h>
#include "gil_contention.h"
#include "time_bins.h"
#include "unit.h"
#include "gil_records.h"

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
	ASSERT_EQ(time_bins__ns(&b, 0), 501, "bin 0");
	ASSERT_EQ(time_bins__ns(&b, 1), 0, "bin 1");
	ASSERT_EQ(time_bins__ns(&b, 2), 500, "bin 2");
	ASSERT_EQ(time_bins__ns(&b, 3), 500, "bin 3");
	ASSERT_EQ(time_bins__used(&b), 4, "bins up to the last non-zero");
	ASSERT_TRUE(time_bins__ratio(&b, 2) == 0.5, "ratio");
	ASSERT_TRUE(time_bins__ratio(&b, 4) == 0, "ratio past the end");
	ASSERT_EQ(b.alloc, 1, "one page of bins");
	time_bins__free(&b);
}

static void test_bounded(void)
{
	struct time_bins b;

	time_bins__init(&b, 0, W);
	ASSERT_EQ(time_bins__add(&b, (__u64)TIME_BINS_MAX * W, 5 * W), 0, "past the last bin");
	ASSERT_EQ(b.npages + b.alloc + time_bins__used(&b), 0, "nothing allocated for it");
	ASSERT_EQ(time_bins__add(&b, (__u64)(TIME_BINS_MAX - 1) * W, 3 * W), 0,
		  "into the last bin");
	ASSERT_EQ(time_bins__used(&b), TIME_BINS_MAX, "the last bin, no further");
	ASSERT_EQ(time_bins__ns(&b, TIME_BINS_MAX - 1), W, "only the last bin's part is counted");
	ASSERT_EQ(b.alloc, 1, "one page of bins");
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

/* Bins [0, N) summed the plain way: the reference for the paged bins. */
#define REF_BINS (5 * TIME_BINS_PAGE + 17)

static void ref_add(__u64 *ref, __u64 ts, __u64 dur)
{
	for (__u64 t = ts; t < ts + dur && t / W < REF_BINS; t++)
		ref[t / W]++;
}

/*
 * Intervals of every length and alignment against pages (inside one bin, across a page edge,
 * covering whole pages, ending on a page's first or last bin): every bin's ns and every
 * point of the counter agree with bins summed one ns at a time.
 */
static void test_pages_exact(void)
{
	static __u64 ref[REF_BINS];
	const __u64 P = (__u64)TIME_BINS_PAGE * W;
	const __u64 iv[][2] = {
		{ 5, 10 },
		{ W - 1, 2 },
		{ P - 3 * W, 6 * W },
		{ 0, 3 * P },
		{ P, P },
		{ P + 1, 2 * P - 2 },
		{ 2 * P - 1, 1 },
		{ 2 * P - W, 2 * P + W },
		{ 4 * P, P + 17 * W },
		{ 123457, 3 * P + 4321 },
		{ 3 * P, 1 },
		{ P - 1, P + 2 },
	};
	struct time_bins_iter it;
	struct time_bins b;
	__u64 ts, prev = ~0ull, want_pts = 0, npts = 0;
	double v;
	int bad = 0;

	memset(ref, 0, sizeof(ref));
	time_bins__init(&b, 0, W);
	for (size_t k = 0; k < sizeof(iv) / sizeof(iv[0]); k++) {
		ref_add(ref, iv[k][0], iv[k][1]);
		ASSERT_EQ(time_bins__add(&b, iv[k][0], iv[k][1]), 0, "add");
	}
	ASSERT_EQ(time_bins__used(&b), REF_BINS, "used: the last interval's last bin");
	for (__u32 i = 0; i < REF_BINS && !bad; i++)
		bad = !ASSERT_EQ(time_bins__ns(&b, i), ref[i], "bin ns");
	/* The counter: a point where the value changes, then 0 after the last bin. */
	for (__u32 i = 0; i < REF_BINS; i++)
		want_pts += ref[i] != prev, prev = ref[i];
	want_pts++;
	time_bins__iter_init(&it, &b);
	prev = ~0ull;
	while (!bad && time_bins__step(&b, &it, 0, &ts, &v)) {
		__u32 i = ts / W;

		npts++;
		if (i < REF_BINS)
			bad = !ASSERT_TRUE(v == (double)ref[i] / W && ref[i] != prev &&
						   (!i || ref[i - 1] != ref[i]),
					   "a point where the value changes");
		else
			bad = !ASSERT_TRUE(i == REF_BINS && v == 0, "0 after the last bin");
		prev = i < REF_BINS ? ref[i] : 0;
	}
	ASSERT_EQ(npts, want_pts, "points");
	time_bins__free(&b);
}

/*
 * A corrupt trace: hours-long intervals (up to the last bin) and far timestamps. Each add
 * used to walk every bin it covered, and memory ran to the last bin for every counter (a
 * GIL wait per process 40 h in: 128 MiB each): now two pages per interval's ends.
 */
static void test_corrupt_spans(void)
{
	struct gil_contention *gc = gil_contention__new(W);
	struct bs_gil_wait w = { .h = { .type = BS_REC_GIL_WAIT, .size = sizeof(w) } };
	const __u64 mid = (__u64)TIME_BINS_MAX / 2 * W;
	const struct time_bins *gb;
	struct time_bins_iter it;
	struct time_bins b;
	__u32 pages = 0, procs = 0, pid;
	size_t at = 0;
	double v;
	__u64 ts;
	int n = 0;

	time_bins__init(&b, 0, W);
	for (int k = 0; k < 1000; k++)
		ASSERT_EQ(time_bins__add(&b, 0, ~0ull / 2), 0, "the whole range");
	ASSERT_EQ(time_bins__ns(&b, TIME_BINS_MAX / 2), 1000 * W, "a bin in the middle");
	ASSERT_EQ(time_bins__ns(&b, TIME_BINS_MAX - 1), 1000 * W, "the last bin");
	ASSERT_TRUE(b.alloc <= 2, "the first and last pages only");
	time_bins__iter_init(&it, &b);
	while (time_bins__step(&b, &it, 0, &ts, &v) && n < 10)
		n++;
	ASSERT_EQ(n, 2, "1000 from the origin, then 0 after the last bin");
	time_bins__free(&b);

	if (!ASSERT_TRUE(gc, "new"))
		return;
	for (pid = 1; pid <= 200; pid++) {
		w.h.pid = w.h.tid = pid;
		w.h.ts = pid == 1 ? 0 : mid + pid * W;
		w.dur = pid == 1 ? ~0ull / 4 : W / 2;
		ASSERT_EQ(gil_contention__add(gc, &w.h, 0), 0, "a wait");
	}
	while ((gb = gil_contention__next(gc, &at, &pid))) {
		procs++;
		pages += gb->alloc;
	}
	ASSERT_EQ(procs, 200, "a counter per process");
	ASSERT_TRUE(pages <= 201, "a page or two each, not every bin up to 40 h");
	gil_contention__free(gc);
}

static void test_gil_contention(void)
{
	struct gil_contention *gc = gil_contention__new(W);
	struct bs_gil_wait w = { .h = { .type = BS_REC_GIL_WAIT,
					.size = sizeof(w),
					.pid = 10,
					.tid = 11,
					.ts = 100 },
				 .dur = 1500 };
	struct bs_gil_hold h = { .h = { .type = BS_REC_GIL_HOLD,
					.size = sizeof(h),
					.pid = 10,
					.tid = 12,
					.ts = 100 },
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
		/* [100, 1600) and [600, 2100): 900 + 400 in bin 0, 600 + 1000 in 1, 100 in 2. */
		ASSERT_EQ(time_bins__ns(b, 0), 1300, "bin 0");
		ASSERT_EQ(time_bins__ns(b, 1), 1600, "bin 1");
		ASSERT_EQ(time_bins__ns(b, 2), 100, "bin 2");
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
	RUN_TEST(test_pages_exact);
	RUN_TEST(test_corrupt_spans);
	RUN_TEST(test_gil_contention);
	return UNIT_EXIT();
}
