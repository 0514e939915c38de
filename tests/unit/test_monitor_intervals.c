// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * monitor --ship's intervals (user/cli/monitor_intervals.c): a counter's increments since the
 * last interval taken, a gauge as read, a histogram's series as counters; an interval not
 * taken (the spool full) leaves its increments and its start to the next one; a series that
 * leaves the exposition and comes back continues from its value then, one that went down is a
 * reset; the labels as JSON, escaped for TabSeparated, the pid label the row's pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "monitor_intervals.h"

static struct monitor_intervals mi = { .job = "j", .host = "h" };

/* The interval to END of TEXT as rows of file ID: their text (malloc'd); *ROWS their count. */
static char *rows_of(const char *text, __u64 end, const char *id, long *rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*rows = monitor_intervals__write(&mi, text, end, id, f);
	fclose(f);
	return buf;
}

#define ROW(id, seq, ts, dur, pid, name, args)                                                     \
	"j\th\t-1\tmonitor\t" id "\t" #seq "\t" #ts "\t" #dur "\t" #pid                            \
	"\t0\tmonitor_interval\t" name "\t" args "\n"

static const char first[] = "# HELP c_total calls\n"
			    "# TYPE c_total counter\n"
			    "c_total{pid=\"12\",comm=\"a b\",syscall=\"read\"} 5\n"
			    "c_total{pid=\"other\",syscall=\"read\"} 0\n"
			    "# TYPE g gauge\n"
			    "g 3\n"
			    "# TYPE h histogram\n"
			    "h_bucket{le=\"0.1\"} 2\n"
			    "h_sum 0.5\n"
			    "h_count 2\n";

/* Its rows, from 100 to 200: c_total{pid="other"} did not move, so has none. */
static const char first_rows[] =
	ROW("i-0", 0, 100, 100, 12, "c_total",
	    "{\"value\":5,\"type\":\"counter\",\"labels\":{\"pid\":\"12\",\"comm\":\"a b\","
	    "\"syscall\":\"read\"}}")
		ROW("i-0", 1, 100, 100, 0, "g", "{\"value\":3,\"type\":\"gauge\",\"labels\":{}}")
			ROW("i-0", 2, 100, 100, 0, "h_bucket",
			    "{\"value\":2,\"type\":\"counter\",\"labels\":{\"le\":\"0.1\"}}")
				ROW("i-0", 3, 100, 100, 0, "h_sum",
				    "{\"value\":0.5,\"type\":\"counter\",\"labels\":{}}")
					ROW("i-0", 4, 100, 100, 0, "h_count",
					    "{\"value\":2,\"type\":\"counter\",\"labels\":{}}");

static void test_counters_gauges_histograms(void)
{
	long n;
	char *out = rows_of(first, 200, "i-0", &n);

	ASSERT_EQ(n, 5, "a row per series but the counter that did not move");
	ASSERT_TRUE(!strcmp(out, first_rows), out);
	free(out);
	monitor_intervals__take(&mi, 200);
}

/*
 * c_total{pid="12"} at VALUE, the interval to END: one row, holding WANT (its span, its
 * value); taken when TAKE.
 */
static void one_row(const char *value, __u64 end, const char *want, int take)
{
	char text[128], *out;
	long n;

	snprintf(text, sizeof(text), "# TYPE c_total counter\nc_total{pid=\"12\"} %s\n", value);
	out = rows_of(text, end, "i", &n);
	ASSERT_TRUE(n == 1 && strstr(out, want), out);
	free(out);
	if (take)
		monitor_intervals__take(&mi, end);
}

static void test_not_taken_goes_to_the_next(void)
{
	/* the spool was full: this interval is dropped */
	one_row("7", 300, "\t200\t100\t12\t0\tmonitor_interval\tc_total\t{\"value\":7,", 0);
	/* the next one spans both, from the last taken (a new series: from 0) */
	one_row("9", 400, "\t200\t200\t12\t0\tmonitor_interval\tc_total\t{\"value\":9,", 1);
	one_row("10", 500, "\t400\t100\t12\t0\tmonitor_interval\tc_total\t{\"value\":1,", 1);
}

static void test_gone_and_back_and_reset(void)
{
	long n;
	char *out;

	/* the series leaves (its process lost its series to busier ones) */
	out = rows_of("# TYPE c_total counter\n", 600, "i-3", &n);
	ASSERT_EQ(n, 0, "no row");
	free(out);
	monitor_intervals__take(&mi, 600);
	/* and comes back where it stopped: the increment is from 10 */
	one_row("13", 700, "\t600\t100\t12\t0\tmonitor_interval\tc_total\t{\"value\":3,", 1);
	/* lower: it started again (a reset), its value is the increment */
	one_row("2", 800, "\t700\t100\t12\t0\tmonitor_interval\tc_total\t{\"value\":2,", 1);
}

static void test_escapes(void)
{
	long n;
	char *out = rows_of("# TYPE g gauge\ng{comm=\"a\\\"b\\\\c\"} 1\nbad line\ng{x=\"1\"} NaN\n",
			    900, "i-6", &n);

	ASSERT_EQ(n, 1, "NaN and a line that is no sample make no row");
	/* the label as the exposition escapes it (JSON's too), then TabSeparated's escapes */
	ASSERT_TRUE(strstr(out, "{\"comm\":\"a\\\\\"b\\\\\\\\c\"}") != NULL, out);
	free(out);
	monitor_intervals__free(&mi);
}

int main(void)
{
	mi.start_ns = 100;
	RUN_TEST(test_counters_gauges_histograms);
	RUN_TEST(test_not_taken_goes_to_the_next);
	RUN_TEST(test_gone_and_back_and_reset);
	RUN_TEST(test_escapes);
	return UNIT_EXIT();
}
