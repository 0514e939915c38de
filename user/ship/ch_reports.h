/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight stats --from clickhouse://HOST:PORT/JOB`: reports computed as SQL in the server
 * over bpfsight.events (ch_schema.h), one answer row per report row, never the events pulled
 * back. Each family says its own, beside the C reports they equal (its NAME_sql.c: struct
 * family_sql, its struct family.sql); each report's columns are stats' own (names, order,
 * units), so that on the same files the numbers equal `stats FILE`'s (docs/CLICKHOUSE.md says
 * where they cannot). A plug-in header of ship's: a family includes it, and ch_sql.h.
 *
 * The SQL means the same on ClickHouse 18.16 and on current releases, with no setting
 * (docs/CLICKHOUSE.md, "How the SQL stays portable"; tests/unit/test_ch_portable.c reads it).
 */
#ifndef BPFSIGHT_CH_REPORTS_H
#define BPFSIGHT_CH_REPORTS_H

#include <stddef.h>

/*
 * A column of an answer: stats' key and title, its type 'u' (u64), 's' (s64), 'd', 't'; a
 * column OPTIONAL is left out when NULL in every row, as stats leaves out a mode's columns
 * (gil_sum's holds, full mode's only).
 */
struct ch_col {
	const char *key, *title;
	char type;
	char optional;
};

struct ch_report {
	const char *name;
	const struct ch_col *cols; /* the answer's columns, in order, ending with a zeroed one */
	/* SELECT ... FORMAT TabSeparated, {W} where the rows' filter goes ("job = 'x' AND ..."),
	 * {J} the job's alone (the rows of a whole file: its window, its threads' names), {F} the
	 * files' order (ch_sql.h's CH_FILE_NS) */
	const char *sql;
	/*
	 * The kinds of row without any of which the answer has no row ("mem_alloc",
	 * "offcpu,offcpu_exit"), NULL for none: a verdict from the server and report --from's
	 * page (verdict_from.c, stats_from.c) take its empty table without asking when the rows
	 * have none of them, which saves its query's analysis (18.16's: some 0.26 s of CPU for
	 * mem_peak's nesting, 0.1 s for nccl_rank_sum's), most of a small job's cost.
	 */
	const char *needs;
};

/*
 * A family's SQL (struct family.sql), each list NULL-terminated, either NULL: REPORTS, those
 * stats --from shows (-r NAME), in the order it shows them; INPUTS, asked by their name alone:
 * what its verdict's rules read there (struct family_verdict.reads' names: a report's table
 * or the state its ADD keeps) and stacks --from's folded lines.
 */
struct family_sql {
	const struct ch_report *const *reports;
	const struct ch_report *const *inputs;
};

/* nsys's timing columns (time_sum.h), then the name: the API sums' and osrt_sum's. */
extern const struct ch_col ch_time_cols[];
/* export --format folded's lines: the folded text, the count (samples, or us off the CPU). */
extern const struct ch_col ch_folded_cols[];

/* The reports stats --from shows, the families' in registry order: from *IT 0, NULL at the end. */
const struct ch_report *ch_report__next(size_t *it);
/*
 * Every SQL stats, stacks and report --from may send (the families' reports and inputs, the
 * files' own): from *IT 0, NULL at the end. What tests/unit/test_ch_portable.c reads.
 */
const struct ch_report *ch_report__every(size_t *it);
/* The report stats --from shows as NAME, or NULL. */
const struct ch_report *ch_report__find(const char *name);
/* Any SQL of NAME: a report, a family's input (its rules', stacks --from's), the files' own
 * (ch_verdict.h); NULL: none. */
const struct ch_report *ch_report__named(const char *name);
/*
 * REPORT's SQL with WHERE in place of {W}, JOB of {J}, FILES of {F} (the files' order,
 * ch_file_order's answer; NULL: its subquery, asked at each use): malloc'd, NULL without memory.
 */
char *ch_report__sql(const struct ch_report *r, const char *where, const char *job,
		     const char *files);
/* The order of the files the rows come from (ch_sql.h's CH_FILE_ORDER) as an array literal,
 * "['id', ...]" (no file: "emptyArrayString()"): what {F} takes, asked once. */
extern const struct ch_report ch_file_order;

#endif /* BPFSIGHT_CH_REPORTS_H */
