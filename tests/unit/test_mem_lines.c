// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What mem's reports decide a row by, on sequences and records laid out by hand: the loop's
 * period in a thread's allocation sizes (mem_period.h), what a sampled allocation stands for
 * (mem_alloc__weight) and which Python files are the job's own (frame_sum__library_file).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "frame_sum.h"
#include "mem_live.h"
#include "mem_period.h"
#include "unit.h"

/* A pass of a loop: these sizes, in this order (one of them made twice). */
static const __u64 pass[] = { 4096, 1 << 20, 512, 4096, 96, 1 << 16, 1 << 20, 24, 8 };
#define PASS_LEN (sizeof(pass) / sizeof(pass[0]))

/* 5 allocations of start-up, then N passes; SHIFT: every third pass has its 2 middle
 * allocations swapped (a DataLoader's batch coming in at another point). */
static size_t loop_sizes(__u64 *v, int n, int shift)
{
	size_t k = 0;

	for (int i = 0; i < 5; i++)
		v[k++] = 7 + i;
	for (int p = 0; p < n; p++) {
		for (size_t i = 0; i < PASS_LEN; i++)
			v[k++] = pass[i];
		if (shift && p % 3 == 0) {
			__u64 t = v[k - 5];

			v[k - 5] = v[k - 4];
			v[k - 4] = t;
		}
	}
	return k;
}

static void test_period_of_a_loop(void)
{
	__u64 v[5 + 40 * PASS_LEN];
	struct mem_period p = { 0 };
	size_t n = loop_sizes(v, 40, 0);

	if (!ASSERT_EQ(mem_period__find(v, n, 4, &p), 0, "found"))
		return;
	ASSERT_EQ(p.period, PASS_LEN, "a pass's allocations (not two passes', nor a size's gap)");
	ASSERT_TRUE(p.anchor != 4096 && p.anchor != 1 << 20, "an anchor made once a pass");
	n = loop_sizes(v, 40, 1);
	ASSERT_EQ(mem_period__find(v, n, 4, &p), 0, "found with passes shuffled a little");
	ASSERT_EQ(p.period, PASS_LEN, "the same period");
}

static void test_no_period(void)
{
	__u64 v[2000];
	struct mem_period p = { 0 };

	srand(1);
	for (size_t i = 0; i < 2000; i++)
		v[i] = (__u64)(rand() % 50) * 64;
	ASSERT_EQ(mem_period__find(v, 2000, 4, &p), -ENOENT, "random sizes: no loop");
	ASSERT_EQ(mem_period__find(v, loop_sizes(v, 3, 0), 4, &p), -ENOENT,
		  "3 passes: fewer than asked");
}

static void test_sampled_weight(void)
{
	struct bs_mem_alloc r = { .bytes = 4096, .sample_rate = 512 << 10 };

	ASSERT_NEAR(mem_alloc__weight(&r), 0, 1e-12, "not sampled: the samples stand for it");
	r.flags = BS_MEM_SAMPLED;
	ASSERT_NEAR(mem_alloc__weight(&r), 1 / (1 - exp(-4096.0 / (512 << 10))), 1e-9,
		    "sampled: 1 / its chance");
	r.sample_rate = 0;
	r.flags = 0;
	ASSERT_NEAR(mem_alloc__weight(&r), 1, 1e-12, "not sampled at all: itself");
	r.flags = BS_MEM_EARLY;
	r.sample_rate = 512 << 10;
	ASSERT_NEAR(mem_alloc__weight(&r), 1, 1e-12, "before stacks: itself, in a row of its own");
}

static void test_library_files(void)
{
	static const char *const lib[] = {
		"/usr/lib/python3.11/threading.py",
		"/usr/lib/python3/dist-packages/torch/nn/modules/conv.py",
		"/home/u/.pyenv/versions/3.12.4/lib/python3.12/json/__init__.py",
		"/opt/venv/lib/python3.10/site-packages/numpy/core/numeric.py",
		"/home/u/src/pytorch/torch/nn/functional.py",
		"<frozen importlib._bootstrap>",
		"",
	};
	static const char *const own[] = {
		"/home/u/train.py",
		"/srv/lib/python_utils/x.py",
		"<string>",
		"/work/tests/workloads/torch_mem.py",
		"/home/u/lib/python/tool.py",
	};

	for (size_t i = 0; i < sizeof(lib) / sizeof(lib[0]); i++)
		ASSERT_TRUE(frame_sum__library_file(lib[i]), lib[i]);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		ASSERT_TRUE(!frame_sum__library_file(own[i]), own[i]);
}

int main(void)
{
	RUN_TEST(test_period_of_a_loop);
	RUN_TEST(test_no_period);
	RUN_TEST(test_sampled_weight);
	RUN_TEST(test_library_files);
	return UNIT_EXIT();
}
