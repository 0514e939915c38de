/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The core of `bpfsight stats`: one pass over a trace feeding every selected report, then
 * their tables in one of three formats. Split from cmd_stats.c so tests drive exactly what
 * the command runs.
 */
#ifndef BPFSIGHT_STATS_H
#define BPFSIGHT_STATS_H

#include <stdio.h>
#include <linux/types.h>
#include "table_view.h"

struct table;
struct verdict;

enum stats_format {
	STATS_FORMAT_TABLE,
	STATS_FORMAT_JSON,
	STATS_FORMAT_CSV,
};

/* "table", "json", "csv" -> *FMT; -EINVAL otherwise. */
int stats__parse_format(const char *s, enum stats_format *fmt);
/* "osrt_sum, sched_sum": every report name, for errors and --help (a buffer of
 * STATS_REPORT_LIST_MAX holds them all: a list cut short misleads). */
#define STATS_REPORT_LIST_MAX 4096
void stats__list_reports(char *buf, size_t len);
/* "table, json, csv": the names --format accepts. */
void stats__list_formats(char *buf, size_t len);

struct stats;

/* What `bpfsight stats` is asked (docs/USAGE.md, "stats"). Zeroed: every row of every report. */
struct stats_opts {
	const char *reports; /* comma-separated names; NULL or "": the default selection */
	enum stats_format fmt;
	struct table_view view; /* table mode */
	int top;		/* --top in JSON and CSV (table mode's is view.top); 0 = all */
	/* Only the records of these processes, threads, process names (none: all). */
	const __u32 *pids, *tids;
	int npids, ntids;
	const char *const *comms;
	int ncomms;
	int python;	      /* --python: cpu_sum's Python frames only */
	const char *group_by; /* --group-by KEY[:N]: the reports that take KEY group so */
	const char *sort;     /* --sort COLUMN: rows by that column (numbers descending) */
	const char *peak;     /* --peak-tflops N|GPU: the reports that compute MFU take it */
	/* --steps=KIND[:ARG]: the per-step reports' source where torch has no steps (steps.h) */
	const char *steps;
	int people;	 /* table mode's rows (REPORT_FOR_PEOPLE): what `bpfsight stats` prints */
	const char *cmd; /* messages' "bpfsight CMD:" (NULL: "stats") */
	int quiet;	 /* say nothing of how the file ended (the caller's other walk does) */
	/* CLOCK_MONOTONIC past which the reading stops: NULL, *STATUS -ETIME (0: none) */
	unsigned long long deadline_ns;
};

/* Like stats__collect, as O says; with the default selection, the verdict is judged too. */
struct stats *stats__collect_opts(const char *path, const struct stats_opts *o, int *status);
/* The records read that are events (what dump prints), those --pid/--tid/--comm kept. */
unsigned long long stats__events(const struct stats *s);
/* The verdict of the default selection, NULL otherwise. */
const struct verdict *stats__verdict(const struct stats *s);
struct steps;
/* Every process's steps, as the per-step reports had them (steps.h). */
const struct steps *stats__steps(const struct stats *s);
/*
 * The verdict's headline of the trace at PATH into BUF, as `bpfsight stats` would open with
 * it: 0, or -EFBIG when the file is over STATS_VERDICT_MAX_BYTES, or -ETIME when its reading
 * would go past BY_NS (CLOCK_MONOTONIC; either would hold up the end of a recording: a
 * storm's 624,000 records took 0.5 s of CPU, and a loaded machine's wall time is more), or
 * another negative errno (BUF then says why, in a few words).
 */
#define STATS_VERDICT_MAX_BYTES (16ull << 20)
int stats__verdict_line(const char *path, __u64 by_ns, char *buf, size_t len);
/* collect + print + free as O says: the exit status of `bpfsight stats`. */
int stats__run_opts(const char *path, const struct stats_opts *o, FILE *out);

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
/*
 * ALL: the default selection (no -r): tables list empty reports in one line at the end, after
 * the verdict and the reports it cites. VIEW: table mode's (NULL: every row, exact numbers).
 */
void stats__print(const struct stats *s, enum stats_format fmt, int all,
		  const struct table_view *view, FILE *out);
void stats__free(struct stats *s);

/* collect + print + free, every row with exact numbers: stats__run_opts with the rest zeroed. */
int stats__run(const char *path, const char *reports, enum stats_format fmt, FILE *out);

#endif /* BPFSIGHT_STATS_H */
