// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Declared columns (table.h): a report's enum is its table's indexes, a declaration that would
 * break that is refused whole, a title or key known only at run time is copied, columns that
 * depend on options are placed through an index map, and every report's declaration holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "family_stats.h"
#include "report.h"
#include "table.h"
#include "time_sum.h"
#include "trace_model.h"
#include "unit.h"

enum { C_NAME, C_TOTAL, C_AVG, C_FILE, NCOLS };

static const struct table_col demo_cols[NCOLS] = {
	[C_NAME] = { "name", "Name", TABLE_STR },
	[C_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64, TABLE_COL_MINOR },
	[C_AVG] = { "avg_ns", NULL, TABLE_DOUBLE, .precision = 3 },
	[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
};

static void test_enum_is_index(void)
{
	struct table *t = table__new("demo");
	char buf[32];

	ASSERT_EQ(table__add_cols(t, demo_cols, NCOLS), 0, "declared");
	ASSERT_EQ(table__ncols(t), NCOLS, "one column per entry");
	for (int i = 0; i < NCOLS; i++)
		ASSERT_EQ(table__col(t, demo_cols[i].key), i, demo_cols[i].key);
	ASSERT_STREQ(table__col_title(t, C_TOTAL), "Total Time (ns)", "title");
	ASSERT_STREQ(table__col_title(t, C_AVG), "avg_ns", "no title: the key");
	ASSERT_EQ(table__col_flags(t, C_TOTAL), TABLE_COL_MINOR, "flags");
	ASSERT_EQ(table__col_flags(t, C_FILE), TABLE_COL_PATH, "flags");
	ASSERT_EQ(table__col_flags(t, C_NAME), 0, "no flags");
	table__row(t);
	ASSERT_EQ(table__set_str(t, C_NAME, "a"), 0, "set by the enum");
	ASSERT_EQ(table__set_u64(t, C_TOTAL, 7), 0, "set by the enum");
	ASSERT_EQ(table__set_double(t, C_AVG, 1.0), 0, "set by the enum");
	ASSERT_EQ(table__get_u64(t, 0, C_TOTAL), 7, "read by the enum");
	ASSERT_STREQ(table__cell_text(t, 0, C_AVG, buf, sizeof(buf)), "1.000", "its precision");
	ASSERT_EQ(table__set_u64(t, NCOLS, 1), -EINVAL, "past the enum");
	table__free(t);

	/* A declaration's leading entries: the columns of a table whose last ones are optional. */
	t = table__new("prefix");
	ASSERT_EQ(table__add_cols(t, demo_cols, C_FILE), 0, "the first three");
	ASSERT_EQ(table__ncols(t), C_FILE, "three columns");
	ASSERT_EQ(table__col(t, "file"), -ENOENT, "the last left out");
	table__free(t);

	/* Shared columns at the head of a report's own: nsys's timing ones. */
	enum { S_NAME = TIME_SUM_NCOLS, S_NCOLS };
	static const struct table_col sum_cols[S_NCOLS] = {
		TIME_SUM_COLS("Num Calls"),
		[S_NAME] = { "name", "Name", TABLE_STR },
	};

	t = table__new("sum");
	ASSERT_EQ(table__add_cols(t, sum_cols, S_NCOLS), 0, "time_sum's and one");
	ASSERT_EQ(table__col(t, "count"), TIME_SUM_COUNT, "time_sum's enum");
	ASSERT_EQ(table__col(t, "stddev_ns"), TIME_SUM_STDDEV, "time_sum's enum");
	ASSERT_EQ(table__col(t, "name"), S_NAME, "the report's after them");
	table__free(t);
}

/* Whatever is wrong, nothing is added and the error sticks. */
static void refused(const struct table_col *cols, int n, const char *what)
{
	struct table *t = table__new("bad");

	ASSERT_EQ(table__add_cols(t, cols, n), -EINVAL, what);
	ASSERT_EQ(table__ncols(t), 0, what);
	ASSERT_EQ(table__err(t), -EINVAL, what);
	table__free(t);
}

static void test_declaration_checked(void)
{
	struct table_col cols[NCOLS];
	struct table *t;

	/* An enum entry without its line: a hole. */
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_AVG] = (struct table_col){ 0 };
	refused(cols, NCOLS, "a hole");
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_FILE].key = "name";
	refused(cols, NCOLS, "a key twice");
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_AVG].precision = 18;
	refused(cols, NCOLS, "precision past a double's");
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_AVG].type = (enum table_type)(TABLE_STR + 1);
	refused(cols, NCOLS, "no such type");
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_NAME].flags = 0x80;
	refused(cols, NCOLS, "no such flag");
	memcpy(cols, demo_cols, sizeof(cols));
	cols[C_AVG].when = 1;
	refused(cols, NCOLS, "an optional column is add_cols_when's");
	refused(demo_cols, 0, "no columns");

	/* The enum would not be the indexes: columns there already, or rows. */
	t = table__new("twice");
	ASSERT_EQ(table__add_cols(t, demo_cols, NCOLS), 0, "first");
	ASSERT_EQ(table__add_cols(t, demo_cols, NCOLS), -EINVAL, "a table declared twice");
	ASSERT_EQ(table__ncols(t), NCOLS, "nothing added");
	table__free(t);
	t = table__new("after");
	table__add_col(t, &(const struct table_col){ "x", "X", TABLE_U64 });
	ASSERT_EQ(table__add_cols(t, demo_cols, NCOLS), -EINVAL, "after another column");
	ASSERT_EQ(table__ncols(t), 1, "nothing added");
	table__free(t);
	t = table__new("rows");
	table__row(t);
	ASSERT_EQ(table__add_cols(t, demo_cols, NCOLS), -EINVAL, "after a row");
	table__free(t);
}

/* A title (or key) decided at run time is declared in an automatic array: the table copies it. */
static void test_run_time_title(void)
{
	char title[32], key[16];
	struct table *t = table__new("rt");
	int kernels = 1;

	snprintf(title, sizeof(title), "Per %s", "Device");
	snprintf(key, sizeof(key), "per_%s", "device");

	enum { R_LABEL = TIME_SUM_NCOLS, R_NAME, R_NCOLS };
	const struct table_col cols[R_NCOLS] = {
		TIME_SUM_COLS(kernels ? "Instances" : "Count"),
		[R_LABEL] = { key, title, TABLE_STR },
		[R_NAME] = { "name", kernels ? "Name" : "Operation", TABLE_STR },
	};

	ASSERT_EQ(table__add_cols(t, cols, R_NCOLS), 0, "declared");
	memset(title, 'x', sizeof(title) - 1);
	memset(key, 'y', sizeof(key) - 1);
	ASSERT_STREQ(table__col_title(t, R_LABEL), "Per Device", "title copied");
	ASSERT_STREQ(table__col_key(t, R_LABEL), "per_device", "key copied");
	ASSERT_STREQ(table__col_title(t, TIME_SUM_COUNT), "Instances", "shared column's title");
	ASSERT_STREQ(table__col_key(t, TIME_SUM_COUNT), "count", "its key the same");
	ASSERT_STREQ(table__col_title(t, R_NAME), "Name", "chosen title");
	table__free(t);
}

/* Columns that depend on options go through the index map; the others follow them. */
static void test_optional_columns(void)
{
	enum { O_NAME, O_MEM, O_SELF_MEM, O_SHAPES, O_STACK, O_PID, O_NCOLS };
	enum { WITH_MEM = 1, BY_SHAPE = 2, BY_STACK = 4 };
	static const struct table_col cols[O_NCOLS] = {
		[O_NAME] = { "name", "Name", TABLE_STR },
		[O_MEM] = { "mem_bytes", "Mem", TABLE_S64, .when = WITH_MEM },
		[O_SELF_MEM] = { "self_mem_bytes", "Self Mem", TABLE_S64, .when = WITH_MEM },
		[O_SHAPES] = { "by", "Input Shapes", TABLE_STR, .when = BY_SHAPE },
		[O_STACK] = { "by", "Source Location", TABLE_STR, .when = BY_STACK },
		[O_PID] = { "pid", "PID", TABLE_U64 },
	};
	struct table *t = table__new("opt");
	int c[O_NCOLS];

	ASSERT_EQ(table__add_cols_when(t, cols, O_NCOLS, BY_STACK, c), 0, "declared");
	ASSERT_EQ(table__ncols(t), 3, "name, stack, pid");
	ASSERT_EQ(c[O_NAME], 0, "name");
	ASSERT_EQ(c[O_MEM], -1, "left out");
	ASSERT_EQ(c[O_SELF_MEM], -1, "left out");
	ASSERT_EQ(c[O_SHAPES], -1, "the other variant left out");
	ASSERT_EQ(c[O_STACK], 1, "after name");
	ASSERT_EQ(c[O_PID], 2, "moved up");
	ASSERT_STREQ(table__col_title(t, c[O_STACK]), "Source Location", "the variant chosen");
	table__row(t);
	ASSERT_EQ(table__set_u64(t, c[O_PID], 9), 0, "set through the map");
	ASSERT_EQ(table__get_u64(t, 0, c[O_PID]), 9, "read through the map");
	ASSERT_EQ(table__set_s64(t, c[O_MEM], 1), -EINVAL, "a column left out is not there");
	table__free(t);

	t = table__new("all");
	ASSERT_EQ(table__add_cols_when(t, cols, O_NCOLS, WITH_MEM | BY_SHAPE, c), 0, "declared");
	ASSERT_EQ(table__ncols(t), 5, "all but the stack");
	for (int i = 0, at = 0; i < O_NCOLS; i++)
		if (i != O_STACK)
			ASSERT_EQ(c[i], at++, "in the array's order");
	table__free(t);

	/* Two variants of one key cannot both be on. */
	t = table__new("both");
	ASSERT_EQ(table__add_cols_when(t, cols, O_NCOLS, BY_SHAPE | BY_STACK, c), -EINVAL,
		  "a key twice");
	ASSERT_EQ(table__ncols(t), 0, "nothing added");
	table__free(t);
}

/* A column only the data names (shim_sum's counts), after the declared ones. */
static void test_dynamic_column(void)
{
	struct table *t = table__new("dyn");

	table__add_cols(t, demo_cols, NCOLS);
	ASSERT_EQ(table__add_col(t, &(const struct table_col){ "kernels", "Kernels", TABLE_U64,
							       TABLE_COL_MINOR }),
		  NCOLS, "its index: the enum's count");
	ASSERT_EQ(table__col_flags(t, NCOLS), TABLE_COL_MINOR, "its flags");
	ASSERT_EQ(table__add_col(t, &(const struct table_col){ "name", "Again", TABLE_STR }),
		  -EINVAL, "a key the table has");
	ASSERT_EQ(table__ncols(t), NCOLS + 1, "not added");
	table__free(t);
}

/* Each report's declaration holds: on an empty trace, every --group-by, no table error. */
static void test_every_report_declares(void)
{
	struct trace_model *m = trace_model__new();
	int n = 0;

	if (!ASSERT_TRUE(m, "model"))
		return;
	for_each_family(it)
		for (const struct report *const *rp = family__stats(it.f)->reports; rp && *rp;
		     rp++) {
			const struct report *r = *rp;

			for (int k = -1; k < 0 || (r->group_by && r->group_by[k]); k++) {
				struct report_ask ask = { .group_by =
								  k < 0 ? NULL : r->group_by[k] };
				void *st = r->new ();
				struct table *t = table__new(r->name);

				if (!ASSERT_TRUE(st && t, r->name))
					return;
				if (r->emit_for)
					r->emit_for(st, m, &ask, t);
				else
					r->emit(st, m, t);
				if (table__err(t))
					unit_fail("%s (--group-by %s): table error %d", r->name,
						  ask.group_by ? ask.group_by : "-", table__err(t));
				n += table__ncols(t) > 0;
				table__free(t);
				r->free(st);
			}
		}
	ASSERT_TRUE(n > 10, "reports with columns on an empty trace");
	trace_model__free(m);
}

int main(void)
{
	RUN_TEST(test_enum_is_index);
	RUN_TEST(test_declaration_checked);
	RUN_TEST(test_run_time_title);
	RUN_TEST(test_optional_columns);
	RUN_TEST(test_dynamic_column);
	RUN_TEST(test_every_report_declares);
	return unit_failed_total ? 1 : 0;
}
