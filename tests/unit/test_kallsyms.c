// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A kernel function's code from kallsyms' text (user/record/kallsyms.c), the cpu family's page-
 * fault handler: its range ends at the next symbol's address, aliases at its own address
 * skipped; a name that is only a prefix, a data symbol, hidden addresses, a symbol at the end
 * and the live /proc/kallsyms.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "unit.h"
#include "kallsyms.h"

static int range_of(const char *text, const char *name, __u64 *lo, __u64 *hi)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	if (!f)
		return -errno;
	err = kallsyms__range_in(f, name, lo, hi);
	fclose(f);
	return err;
}

static const char sample[] = "ffffffff82260100 T __pfx_exc_page_fault\n"
			     "ffffffff82260110 T exc_page_fault\n"
			     "ffffffff82260110 t exc_page_fault_alias\n"
			     "ffffffff82260880 T __pfx_get_cpu_entry_area\n"
			     "ffffffff82300000 D exc_page_fault_data\n"
			     "ffffffffc0000000 t last_one\t[some_module]\n";

static void test_range_ends_at_the_next_address(void)
{
	__u64 lo = 0, hi = 0;

	ASSERT_EQ(range_of(sample, "exc_page_fault", &lo, &hi), 0, "found");
	ASSERT_EQ(lo, 0xffffffff82260110ull, "its address");
	ASSERT_EQ(hi, 0xffffffff82260880ull, "the next address, not its alias's");
}

static void test_what_is_not_it(void)
{
	__u64 lo = 0, hi = 0;

	ASSERT_EQ(range_of(sample, "exc_page", &lo, &hi), -ENOENT, "a prefix is not the name");
	ASSERT_EQ(range_of(sample, "exc_page_fault_data", &lo, &hi), -ENOENT, "data, not code");
	ASSERT_EQ(range_of(sample, "last_one", &lo, &hi), -EINVAL, "nothing after it");
	ASSERT_EQ(range_of("0000000000000000 T exc_page_fault\n0000000000000000 T next\n",
			   "exc_page_fault", &lo, &hi),
		  -EPERM, "addresses hidden (kptr_restrict)");
	ASSERT_EQ(range_of("garbage\n\nffff T\n", "exc_page_fault", &lo, &hi), -ENOENT,
		  "malformed lines skipped");
}

/* The running kernel's own handler, where this runs as root (the tests' BPF needs it). */
static void test_the_running_kernel(void)
{
	__u64 lo = 0, hi = 0;
	int err = kallsyms__range("exc_page_fault", &lo, &hi);

	if (err == -ENOENT || err == -EPERM)
		return; /* before 5.8 (do_page_fault), or not root */
	ASSERT_EQ(err, 0, "read");
	ASSERT_TRUE(lo && hi > lo && hi - lo < 65536, "a function's size");
}

int main(void)
{
	RUN_TEST(test_range_ends_at_the_next_address);
	RUN_TEST(test_what_is_not_it);
	RUN_TEST(test_the_running_kernel);
	return UNIT_EXIT();
}
