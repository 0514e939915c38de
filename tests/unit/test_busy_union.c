// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A GPU's busy time as the union of its kernels' intervals (user/report/busy_union.c), as monitor's
 * bpfsight_gpu_busy_seconds_total counts it: overlaps count once, whatever the order the
 * intervals arrive in, against a brute-force union over a bitmap of nanoseconds.
 */
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "busy_union.h"

static void test_overlaps_count_once(void)
{
	struct busy_union u = { 0 };

	busy_union__add(&u, 100, 200); /* 100 */
	busy_union__add(&u, 150, 250); /* +50: overlaps the first */
	busy_union__add(&u, 300, 400); /* +100: disjoint */
	busy_union__add(&u, 250, 300); /* +50: fills the gap exactly, touching both */
	busy_union__add(&u, 120, 380); /* +0: inside what is covered */
	busy_union__add(&u, 50, 60);   /* +10: before everything, arriving late */
	busy_union__add(&u, 500, 500); /* empty */
	ASSERT_EQ(u.busy_ns, 310, "busy time");
	ASSERT_EQ(u.n, 2, "spans kept: [50,60) and [100,400)");
	busy_union__free(&u);
}

/* Random intervals in random order against a bitmap: the union's length, exactly. */
static void test_random_against_bitmap(void)
{
	enum { T = 20000, N = 3000 };
	static unsigned char bit[T];
	struct busy_union u = { 0 };
	__u64 want = 0;

	srand(7);
	memset(bit, 0, sizeof(bit));
	for (int i = 0; i < N; i++) {
		__u64 s = rand() % T, len = rand() % 40, e = s + len > T ? T : s + len;

		busy_union__add(&u, s, e);
		for (__u64 t = s; t < e; t++)
			bit[t] = 1;
	}
	for (int t = 0; t < T; t++)
		want += bit[t];
	ASSERT_EQ(u.busy_ns, want, "union of 3000 random intervals");
	for (size_t i = 1; i < u.n; i++)
		ASSERT_TRUE(u.spans[i - 1].end < u.spans[i].start, "spans disjoint and sorted");
	busy_union__free(&u);
}

/* Spans older than the memory behind the latest end are forgotten: the memory stays small. */
static void test_old_spans_are_forgotten(void)
{
	struct busy_union u = { 0 };
	__u64 gap = BUSY_UNION_KEEP_NS / 4;

	for (__u64 i = 0; i < 100; i++)
		busy_union__add(&u, i * gap, i * gap + 10);
	ASSERT_EQ(u.busy_ns, 1000, "100 kernels of 10 ns");
	ASSERT_TRUE(u.n <= 5, "only the last KEEP_NS of spans kept");
	busy_union__free(&u);
}

int main(void)
{
	RUN_TEST(test_overlaps_count_once);
	RUN_TEST(test_random_against_bitmap);
	RUN_TEST(test_old_spans_are_forgotten);
	return UNIT_EXIT();
}
