/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `bpfsight stats --from clickhouse://HOST:PORT/JOB`: ch_reports.h's reports, printed as stats. */
#ifndef BPFSIGHT_STATS_FROM_H
#define BPFSIGHT_STATS_FROM_H

#include <stdio.h>
#include "stats.h"

struct stats_from {
	const char *url;
	const char *reports; /* "a,b", NULL: every report the server computes */
	const char *host;    /* only this host's rows, NULL: every host's */
	const char *file;    /* only this file's rows (its path as shipped), NULL: every file's */
	int rank;	     /* only this rank's rows, -2: every rank's */
	enum stats_format fmt;
	int width;   /* the verdict's columns (table format), 0: no limit */
	int verbose; /* -v: the server's release said on stderr */
};

/* The reports, to OUT: the exit status (0; 1 said on stderr; ship's 2, 4, 6 for the server). */
int stats_from__run(const struct stats_from *f, FILE *out);
/* `stacks --from`: the CPU samples' folded stacks to OUT, as export --format folded writes
 * them ("root;...;leaf COUNT" lines), or (OFFCPU) the off-CPU time's, as --format
 * folded-offcpu: the exit status, as stats_from__run's. */
int stats_from__folded(const struct stats_from *f, int offcpu, FILE *out);

/*
 * `report --from`'s page (report_html.h) to OUT: the verdict judged from the server's answers
 * and every report it computes: the exit status, as stats_from__run's.
 */
int stats_from__page(const struct stats_from *f, FILE *out);

struct ch_server;
struct ch_report;
struct table;
/* Report R's SQL run in server S over the rows WHERE ({W}) and JOB ({J}) select, FILES their
 * files' order ({F}: stats_from__files's, NULL: asked in the SQL), its answer into T: 0, or
 * -errno (S's error says the server's). */
int stats_from__table(struct ch_server *s, const struct ch_report *r, const char *where,
		      const char *job, const char *files, struct table *t);
/* Report R's answer over no row into T, asking nothing (its columns but the optional ones). */
int stats_from__no_rows(const struct ch_report *r, struct table *t);
/* The order of the files the rows come from (ch_file_order), asked once into BUF: BUF, or NULL
 * (not known: each query asks it). */
const char *stats_from__files(struct ch_server *s, const char *where, const char *job, char *buf,
			      size_t len);

/*
 * The warning stats FILE prints when events were lost while recording, from the `loss` rows
 * (stats_from_loss.c): above the reports in table format (naming those of LIST, "a,b", that
 * the losses touch), on stderr else; a note when they touch none. 0, or -errno.
 */
int stats_from__losses(struct ch_server *s, const struct stats_from *f, const char *where,
		       const char *job, const char *files, const char *list, FILE *out);

/* The events lost while recording, from the `loss` rows: how many, by family and cause. */
struct stats_from_loss {
	unsigned long long lost; /* 0: none */
	char causes[512];	 /* "all ringbuf_full: 2169" */
	char reports[512];	 /* those of the list given that they touch, "a, b" */
	int touched;		 /* how many */
};

/* L from server S's `loss` rows, the reports of LIST ("a,b") touched: 0, or -errno. */
int stats_from__loss_said(struct ch_server *s, const char *where, const char *job,
			  const char *files, const char *list, struct stats_from_loss *l);

/*
 * nccl_stragglers' sentences under T, its answer from server S (stragglers_from.c): stats
 * FILE's, from the server's nccl_rank_sum (RANK_SUM when already asked, the verdict's, else
 * asked here). 0, or -errno.
 */
int stats_from__straggler_notes(struct ch_server *s, const char *where, const char *job,
				const char *files, struct table *t, const struct table *rank_sum);

#endif /* BPFSIGHT_STATS_FROM_H */
