/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The core of `bpfsight stats`: one pass over a trace feeding every selected report, then
 * their tables in one of three formats. Split from cmd_stats.c so tests drive exactly what
 * the command runs.
 */
#ifndef BPFSIGHT_STATS_H
#define BPFSIGHT_STATS_H

#include <stdio.h>

struct table;

enum stats_format {
	STATS_FORMAT_TABLE,
	STATS_FORMAT_JSON,
	STATS_FORMAT_CSV,
};

/* "table", "json", "csv" -> *FMT; -EINVAL otherwise. */
int stats__parse_format(const char *s, enum stats_format *fmt);
/* "osrt_sum, sched_sum": every report name, for errors and --help. */
void stats__list_reports(char *buf, size_t len);
/* "table, json, csv": the names --format accepts. */
void stats__list_formats(char *buf, size_t len);

struct stats;

/*
 * Read PATH once and run REPORTS (comma-separated names; NULL or "" = the reports of every
 * family the trace recorded). Messages go to stderr, prefixed "bpfsight stats: ". Returns
 * NULL with *STATUS = EXIT_READ_FAIL (unknown report, unreadable file), else the results
 * with *STATUS = EXIT_READ_OK or EXIT_READ_CORRUPT.
 */
struct stats *stats__collect(const char *path, const char *reports, int *status);
/* The table of report NAME, NULL when it was not selected. */
const struct table *stats__table(const struct stats *s, const char *name);
/* Total events lost, by the trace's loss records. */
unsigned long long stats__lost(const struct stats *s);
/* ALL: the default selection (no -r): tables list empty reports in one line at the end. */
void stats__print(const struct stats *s, enum stats_format fmt, int all, FILE *out);
void stats__free(struct stats *s);

/* collect + print + free: the exit status of `bpfsight stats`. */
int stats__run(const char *path, const char *reports, enum stats_format fmt, FILE *out);

#endif /* BPFSIGHT_STATS_H */
