// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kinds of row a report or a rule's state computed in ClickHouse is made of (struct
 * ch_report.needs): stats --from and report --from take its empty table without asking the
 * server where the rows have none of them. Which kinds the events per kind say the rows have
 * (whole names, any of a list, a count of 0 none), and every kind a report needs named in its
 * SQL: a misspelt one would leave the report empty where the rows have its kind.
 */
#include <string.h>
#include "unit.h"
#include "ch_reports.h"
#include "table.h"
#include "verdict_from.h"

/* The events per kind as the server answers ch_verdict_kinds. */
static struct table *kinds(void)
{
	static const struct table_col cols[] = {
		{ "kind", "Kind", TABLE_STR },
		{ "count", "Rows", TABLE_U64 },
	};
	static const struct {
		const char *kind;
		__u64 n;
	} rows[] = { { "cuda_api", 7 }, { "offcpu_exit", 4 }, { "syscall", 0 } };
	struct table *t = table__new("verdict_kinds");

	table__add_cols(t, cols, 2);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		table__row(t);
		table__set_str(t, 0, rows[i].kind);
		table__set_u64(t, 1, rows[i].n);
	}
	return t;
}

static void test_kinds_the_rows_have(void)
{
	struct table *t = kinds();

	ASSERT_EQ(table__err(t), 0, "the events per kind");
	ASSERT_EQ(verdict_from__kinds_have(t, "cuda_api"), 1, "a kind the rows have");
	ASSERT_EQ(verdict_from__kinds_have(t, "offcpu"), 0, "offcpu_exit is not offcpu");
	ASSERT_EQ(verdict_from__kinds_have(t, "offcpu,offcpu_exit"), 1, "any of a list");
	ASSERT_EQ(verdict_from__kinds_have(t, "nccl_api,cuda_api"), 1, "the list's last");
	ASSERT_EQ(verdict_from__kinds_have(t, "syscall,syscall_agg"), 0, "0 rows are none");
	ASSERT_EQ(verdict_from__kinds_have(t, "cuda"), 0, "a prefix is no kind");
	ASSERT_EQ(verdict_from__kinds_have(NULL, "cuda_api"), 0, "no kinds known");
	table__free(t);
}

/* Each kind of R's needs is read in its SQL ('kind'). */
static void needs_in_sql(const struct ch_report *r)
{
	char quoted[80];

	for (const char *k = r->needs; k && *k;
	     k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
		snprintf(quoted, sizeof(quoted), "'%.*s'", (int)strcspn(k, ","), k);
		if (!ASSERT_TRUE(strstr(r->sql, quoted) != NULL, r->name))
			printf("# %s needs %s, not in its SQL\n", r->name, quoted);
	}
}

static void test_needs_named_in_the_sql(void)
{
	static const char *const states[] = {
		"osrt_thread_calls",   "cuda_thread_calls", "gpu_idle_devs",
		"open_at_edges_state", "nccl_hang_state",   "cpu_fault_procs",
		"torch_input_waits",   "blas_thread_gemms", "gpum_devices",
		"cublas_step_gemms",   "mem_ooms",	    "mem_devices",
	};
	const struct ch_report *r, *snaps = ch_report__named("verdict_snaps");
	size_t it = 0;
	int with = 0;

	while ((r = ch_report__next(&it))) {
		needs_in_sql(r);
		with += r->needs != NULL;
	}
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		r = ch_report__named(states[i]);
		if (!ASSERT_TRUE(r != NULL, states[i]))
			continue;
		ASSERT_TRUE(r->needs != NULL, states[i]);
		needs_in_sql(r);
	}
	if (ASSERT_TRUE(snaps && snaps->needs, "the threads' snapshots"))
		needs_in_sql(snaps);
	ASSERT_EQ(with, 14, "the reports made of some kinds only (all but ranks)");
}

int main(void)
{
	RUN_TEST(test_kinds_the_rows_have);
	RUN_TEST(test_needs_named_in_the_sql);
	return UNIT_EXIT();
}
