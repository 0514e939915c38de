/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal test_progs-style harness for C unit tests. Each TEST() prints one line,
 * "ok - NAME", "not ok - NAME: reason" or "skip - NAME: reason", which tests/run_tests.py
 * counts (a skipped case is counted as skipped, never as passed). ASSERT_* return bool so a
 * test can `goto cleanup` on failure; UNIT_SKIP() marks the case skipped, and the case
 * returns.
 */
#ifndef BPFSIGHT_UNIT_H
#define BPFSIGHT_UNIT_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int unit_failed_total;
static int unit_case_failed;
static int unit_case_skipped;
static char unit_reason[512];

#define unit_fail(...)                                                                             \
	do {                                                                                       \
		if (!unit_case_failed)                                                             \
			snprintf(unit_reason, sizeof(unit_reason), __VA_ARGS__);                   \
		unit_case_failed = 1;                                                              \
	} while (0)

#define ASSERT_TRUE(c, what)                                                                       \
	({                                                                                         \
		bool ___ok = (c);                                                                  \
		if (!___ok)                                                                        \
			unit_fail("%s:%d: %s", __FILE__, __LINE__, what);                          \
		___ok;                                                                             \
	})

#define ASSERT_EQ(a, b, what)                                                                      \
	({                                                                                         \
		long long ___a = (long long)(a), ___b = (long long)(b);                            \
		bool ___ok = ___a == ___b;                                                         \
		if (!___ok)                                                                        \
			unit_fail("%s:%d: %s: %lld != %lld", __FILE__, __LINE__, what, ___a,       \
				  ___b);                                                           \
		___ok;                                                                             \
	})

/* |a - b| <= eps, for computed statistics (doubles). */
#define ASSERT_NEAR(a, b, eps, what)                                                               \
	({                                                                                         \
		double ___a = (a), ___b = (b);                                                     \
		bool ___ok = fabs(___a - ___b) <= (eps);                                           \
		if (!___ok)                                                                        \
			unit_fail("%s:%d: %s: %.6f != %.6f", __FILE__, __LINE__, what, ___a,       \
				  ___b);                                                           \
		___ok;                                                                             \
	})

#define ASSERT_STREQ(a, b, what)                                                                   \
	({                                                                                         \
		const char *___a = (a), *___b = (b);                                               \
		bool ___ok = ___a && ___b && strcmp(___a, ___b) == 0;                              \
		if (!___ok)                                                                        \
			unit_fail("%s:%d: %s: \"%s\" != \"%s\"", __FILE__, __LINE__, what,         \
				  ___a ? ___a : "(null)", ___b ? ___b : "(null)");                 \
		___ok;                                                                             \
	})

/* The case cannot run here (what it needs is missing): say why; the caller then returns. */
#define UNIT_SKIP(...)                                                                             \
	do {                                                                                       \
		if (!unit_case_failed && !unit_case_skipped)                                       \
			snprintf(unit_reason, sizeof(unit_reason), __VA_ARGS__);                   \
		unit_case_skipped = 1;                                                             \
	} while (0)

/* Run FN (void fn(void)) as one test case. A failure before a skip is still a failure. */
#define RUN_TEST(fn)                                                                               \
	do {                                                                                       \
		unit_case_failed = unit_case_skipped = 0;                                          \
		unit_reason[0] = 0;                                                                \
		fn();                                                                              \
		if (unit_case_failed) {                                                            \
			printf("not ok - %s: %s\n", #fn, unit_reason);                             \
			unit_failed_total++;                                                       \
		} else if (unit_case_skipped) {                                                    \
			printf("skip - %s: %s\n", #fn, unit_reason);                               \
		} else {                                                                           \
			printf("ok - %s\n", #fn);                                                  \
		}                                                                                  \
		fflush(stdout);                                                                    \
	} while (0)

#define UNIT_EXIT() (unit_failed_total ? 1 : 0)

#endif /* BPFSIGHT_UNIT_H */
