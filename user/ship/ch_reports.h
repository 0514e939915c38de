/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight stats --from clickhouse://HOST:PORT/JOB`: reports computed as SQL in the server
 * over bpfsight.events (ch_schema.h), one answer row per report row, never the events pulled
 * back. Each report's columns are stats' own (names, order, units), so that on the same files
 * the numbers equal `stats FILE`'s (docs/CLICKHOUSE.md says where they cannot).
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
	 * {J} the job's alone (the rows of a whole file: its window, its threads' names) */
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

/* The reports the server computes, NULL-terminated. */
extern const struct ch_report *const ch_reports[];

/* The reports across ranks (ch_rank_reports.c). */
extern const struct ch_report ch_ranks, ch_nccl_rank_sum, ch_rank_waits;

/* export --format folded's lines of the CPU samples (`stacks --from`): text, count. */
extern const struct ch_report ch_folded_stacks;
/* export --format folded-offcpu's: the off-CPU intervals' time (us) by blocking stack. */
extern const struct ch_report ch_folded_offcpu;

/* mem_peak (ch_mem_peak.c). */
extern const struct ch_report ch_mem_peak;

/* gil_blocked_by (ch_gil_reports.c). */
extern const struct ch_report ch_gil_blocked_by;

/* mem_leaks (ch_mem_leaks.c). */
extern const struct ch_report ch_mem_leaks;

/* The reports over the events' stacks (ch_cpu_reports.c). */
extern const struct ch_report ch_cpu_sum, ch_gil_stacks, ch_offcpu_stacks;

const struct ch_report *ch_report__find(const char *name);
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
