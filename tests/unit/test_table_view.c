// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tables for people (table_view.c, human.c): the unit each number reads in, names cut in the
 * middle and C++ names to their base, paths to file names, text wrapped, and a whole table
 * made to fit a width (titles on two lines, minor columns left out and said so, empty rows
 * and rows past --top left out and said so).
 */
#include <stdlib.h>
#include <string.h>
#include "human.h"
#include "table.h"
#include "table_view.h"
#include "unit.h"
#include "utf8.h"

static void test_durations(void)
{
	static const struct {
		double ns;
		const char *text;
	} cases[] = {
		{ 0, "0 ns" },
		{ 87, "87 ns" },
		{ 999, "999 ns" },
		{ 999.6, "1.00 µs" },
		{ 2274, "2.27 µs" },
		{ 99949, "99.9 µs" },
		{ 99960, "100 µs" },
		{ 5457056.0, "5.46 ms" },
		{ 999500000, "1.00 s" },
		{ 38681651777, "38.7 s" },
		{ 531319608120, "531 s" },
		{ 5e12, "5000 s" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ASSERT_STREQ(human__ns(cases[i].ns, buf, sizeof(buf)), cases[i].text, "human__ns");
}

static void test_sizes(void)
{
	char buf[32];

	ASSERT_STREQ(human__bytes(512, buf, sizeof(buf)), "512 B", "bytes");
	ASSERT_STREQ(human__bytes(1536, buf, sizeof(buf)), "1.50 KiB", "KiB");
	ASSERT_STREQ(human__bytes(212992, buf, sizeof(buf)), "208 KiB", "208 KiB");
	ASSERT_STREQ(human__bytes(3.2 * (1 << 30), buf, sizeof(buf)), "3.20 GiB", "GiB");
}

static void test_elide_and_shorten(void)
{
	const char *cxx = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"
			  "<float, float, false>(int, float, float const*, float*)";
	char buf[256];
	const char *s;

	ASSERT_STREQ(human__elide("short", 10, buf, sizeof(buf)), "short", "fits: whole");
	s = human__elide("abcdefghijklmnopqrstuvwxyz", 10, buf, sizeof(buf));
	ASSERT_STREQ(s, "abcdef…xyz", "cut in the middle, more head than tail");
	ASSERT_EQ(human__width(s), 10, "ten columns, … counting one");
	ASSERT_STREQ(human__elide("µµµµµµµµµµµµ", 5, buf, sizeof(buf)), "µµµ…µ",
		     "UTF-8 cut at characters");
	s = human__shorten(cxx, 60, buf, sizeof(buf));
	ASSERT_STREQ(s, "at::native::vectorized_layer_norm_kernel<…>(…)", "C++ base name");
	s = human__shorten(cxx, 20, buf, sizeof(buf));
	ASSERT_EQ(human__width(s), 20, "then cut to the width");
	ASSERT_TRUE(!strncmp(s, "at::native::", 12), s);
	/* A Python name with <...> is no C++: cut in the middle only. */
	s = human__shorten("background.<locals>.<genexpr>", 20, buf, sizeof(buf));
	ASSERT_STREQ(s, "background.<l…nexpr>", "python names keep their brackets");
	ASSERT_STREQ(human__base("/opt/torch/site-packages/x/modeling_gpt2.py"), "modeling_gpt2.py",
		     "a path's file name");
	ASSERT_STREQ(human__base("<frozen importlib._bootstrap>"), "<frozen importlib._bootstrap>",
		     "not a path");
}

/* Lines of TEXT and the widest (in columns). */
static int widest(const char *text, int *lines)
{
	char *copy = strdup(text), *save = NULL, *l;
	int w = 0;

	*lines = 0;
	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (human__width(l) > w)
			w = human__width(l);
		(*lines)++;
	}
	free(copy);
	return w;
}

static char *print_view(const struct table *t, const struct table_view *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	table__print_view(t, v, f);
	fclose(f);
	return buf;
}

static void test_wrap(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int lines, n;

	n = human__wrap(f, "the quick brown fox jumps over the lazy dog again and again", 20, 0, 2);
	fclose(f);
	ASSERT_EQ(widest(buf, &lines), 20, "no line over 20");
	ASSERT_EQ(n, lines, "the lines it says it printed");
	ASSERT_TRUE(!strncmp(strchr(buf, '\n') + 1, "  ", 2), "continuations indented");
	free(buf);
}

/* A table like sched_sum's: ids, durations, counts, two names, one path, a minor column. */
static struct table *sample_table(int rows)
{
	enum { C_TID, C_WAIT_COUNT, C_TOTAL, C_BYTES, C_STDDEV, C_FILE, C_FUNC, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_TID] = { "tid", "TID", TABLE_U64 },
		[C_WAIT_COUNT] = { "wait_count", "Waits", TABLE_U64, TABLE_COL_WEIGHT },
		[C_TOTAL] = { "total_ns", "Total Wait Time (ns)", TABLE_U64 },
		[C_BYTES] = { "bytes", "Bytes Moved (B)", TABLE_U64 },
		[C_STDDEV] = { "stddev_ns", "StdDev (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },
		[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
		[C_FUNC] = { "func", "Function", TABLE_STR },
	};
	struct table *t = table__new("demo");

	table__add_cols(t, cols, NCOLS);
	for (int r = 0; r < rows; r++) {
		table__row(t);
		table__set_u64(t, C_TID, 100 + r);
		table__set_u64(t, C_WAIT_COUNT, r % 3 ? 5 : 0); /* every third row never waited */
		table__set_u64(t, C_TOTAL, 5457056ull * (r + 1));
		table__set_u64(t, C_BYTES, 1536);
		table__set_double(t, C_STDDEV, 1234.5);
		table__set_str(t, C_FILE,
			       "/opt/torch/.venv/lib/python3.12/site-packages/transformers/"
			       "models/gpt2/modeling_gpt2.py");
		table__set_str(t, C_FUNC,
			       "GPT2Attention.forward_with_a_rather_long_name_to_cut_down");
	}
	return t;
}

static void test_view_human(void)
{
	struct table *t = sample_table(6);
	struct table_view v = { .width = 0 };
	char *out = print_view(t, &v);

	ASSERT_TRUE(strstr(out, "10.9 ms") && strstr(out, "1.50 KiB"), "human units");
	ASSERT_TRUE(strstr(out, "Total Wait Time ") && !strstr(out, "(ns)") && !strstr(out, "(B)"),
		    "titles lose the unit the cells say");
	ASSERT_TRUE(strstr(out, "modeling_gpt2.py") && !strstr(out, "/opt/torch"),
		    "paths as file names");
	ASSERT_TRUE(!strstr(out, " 100 ") && strstr(out, " 101 "), "rows that never waited hidden");
	ASSERT_TRUE(strstr(out, "2 rows with nothing in them not shown"), "and said so");
	free(out);
	v.raw = 1;
	v.wide = 1;
	out = print_view(t, &v);
	ASSERT_TRUE(strstr(out, "10914112") && strstr(out, "Total Wait Time (ns)") &&
			    strstr(out, "/opt/torch/.venv"),
		    "--units ns --wide: exact numbers, whole paths");
	free(out);
	table__free(t);
}

static void test_view_fits(void)
{
	struct table *t = sample_table(40);
	struct table_view v = { .width = 60, .top = 15 };
	int lines, width;
	char *out;

	out = print_view(t, &v);
	width = widest(out, &lines);
	ASSERT_TRUE(width <= 60, "no line over the width");
	ASSERT_TRUE(strstr(out, "…"), "a long name cut");
	ASSERT_TRUE(strstr(out, "more rows (--top 0 shows all)"), "rows past --top said");
	ASSERT_TRUE(strstr(out, "Left out to fit: StdDev"), "the minor column left out first");
	free(out);
	for (int w = 20; w <= 120; w += 7) {
		v.width = w;
		out = print_view(t, &v);
		ASSERT_TRUE(widest(out, &lines) <= w, "any width");
		free(out);
	}
	/* Two-line titles: the numbers' columns stay as narrow as their cells. */
	v.width = 75;
	out = print_view(t, &v);
	ASSERT_TRUE(!strstr(out, "Total Wait Time") && strstr(out, "Wait Time") &&
			    strstr(out, "Total ") < strstr(out, "Wait Time"),
		    "a title on two lines");
	ASSERT_TRUE(!strstr(out, " \n"), "no trailing spaces");
	free(out);
	table__free(t);
}

/* What a terminal is shown of names a process chose: controls and invalid UTF-8 as '?'. */
static void test_printable(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "e\x1b[31mvil\x07", "e?[31mvil?" }, /* ESC, BEL */
		{ "del\x7f", "del?" },
		{ "csi\xc2\x9b!", "csi?!" },	    /* U+009B, a C1 control */
		{ "nbsp\xc2\xa0", "nbsp\xc2\xa0" }, /* U+00A0: printable */
		{ "caf\xc3\xa9 \xe6\x97\xa5", "caf\xc3\xa9 \xe6\x97\xa5" },
		{ "bad\xff\xfe", "bad??" },
		{ "over\xc0\xaflong", "over??long" }, /* an overlong '/' */
		{ "cut\xe6\x97", "cut??" },	      /* a sequence cut short */
	};
	char buf[64];
	char *mem = NULL;
	size_t len = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = open_memstream(&mem, &len);

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		ASSERT_STREQ(utf8__printable(buf), cases[i].out, cases[i].in);
		utf8__put_printable(f, cases[i].in);
		fclose(f);
		ASSERT_STREQ(mem, cases[i].out, "written");
		ASSERT_EQ(utf8__is_printable(cases[i].in), !strcmp(cases[i].in, cases[i].out),
			  cases[i].in);
		free(mem);
		mem = NULL;
	}
}

int main(void)
{
	RUN_TEST(test_durations);
	RUN_TEST(test_sizes);
	RUN_TEST(test_elide_and_shorten);
	RUN_TEST(test_wrap);
	RUN_TEST(test_view_human);
	RUN_TEST(test_view_fits);
	RUN_TEST(test_printable);
	return unit_failed_total ? 1 : 0;
}
