/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The reading loop info, dump and stats share: open with a useful error, feed every record
 * to the model, set aside records too short for their type, count losses, and at the end
 * say what was missing and which exit status that deserves (EXIT_READ_*, below). The
 * records pass through the families' reorder hooks first (family.h), which may hold some
 * and give them back later (the gpu family's launch join).
 */
#ifndef BPFSIGHT_TRACE_WALK_H
#define BPFSIGHT_TRACE_WALK_H

#include <linux/types.h>
#include "family.h"
#include "trace_model.h"
#include "trace_reader.h"

#define TRACE_WALK_LOSSES 32

/* Exit statuses of the reading commands (info, dump, stats, export, report, top FILE). */
#define EXIT_READ_OK	  0 /* clean, or truncated by a crash and recovered (warned on stderr) */
#define EXIT_READ_FAIL	  1 /* cannot open, not a trace, bad arguments */
#define EXIT_READ_CORRUPT 3 /* printed all that was readable, but corrupt chunks were skipped */

struct trace_walk {
	const char *cmd; /* "info", for messages */
	const char *path;
	struct trace_reader *r;
	struct trace_model *m;
	__u64 short_records;	     /* records shorter than their decoder's min_size */
	__u64 lost[BS_LOSS_MAX + 1]; /* BS_REC_LOSS counts by cause; [BS_LOSS_MAX]: unknown ones */
	__u64 lost_total;
	/* The families' reorder hooks, in registry order: the file's records enter the first. */
	struct trace_walk_stage {
		const struct family *f;
		void *st;
		int ended; /* what comes into it has all come */
	} stages[FAMILY_MAX];
	int nstages;
	/*
	 * Set after open: finish does not say that the file was not closed (a caller that shows
	 * it, as info does, or whose other walk of the file says it, as report's).
	 */
	int quiet;
	/* The same by family (loss__family_name); what does not fit goes to the last. */
	struct trace_walk_loss {
		const char *family;
		__u32 slot; /* loss_cause__slot */
		__u64 count;
	} lost_by[TRACE_WALK_LOSSES];
	int nlost_by;
	/* The last record clipped to the recording's start (struct rec_decoder.span), a copy. */
	void *clip;
	size_t clip_cap;
	__u64 clipped, before; /* intervals clipped, and wholly before the start (left out) */
};

/* 0, or EXIT_READ_FAIL after printing "bpfsight CMD: PATH: reason" on stderr. */
int trace_walk__open(struct trace_walk *w, const char *cmd, const char *path);
/*
 * Next record in file order (but for what a reorder hook held: the gpu family's GPU and CUPTI
 * API records come when their launch join decided them), already observed by the model. Time
 * stays inside the recording: an interval (struct rec_decoder.span) that began before the
 * file's start comes clipped to it (a copy; trace_model__began says its begin): what a
 * recording's probes saw end after it attached, a call in flight at its end, what a flight
 * window's records began before it. One that ended before the start does not come (counted in
 * BEFORE): what the probes saw while the recorder set up; a cupti-shim family's comes as it
 * is (its clock is the job's CUPTI's).
 * *DEC = its decoder (NULL for a type no family knows). Returns 1 for a record, 2 for one shorter than its decoder needs
 * (counted and warned about once; do not decode it), 0 at the end.
 */
int trace_walk__next(struct trace_walk *w, const struct bs_hdr **rec,
		     const struct rec_decoder **dec);
const struct trace_meta *trace_walk__meta(const struct trace_walk *w);
const struct trace_status *trace_walk__status(const struct trace_walk *w);
/* After the end: warn about truncation and corruption; returns the exit status. */
int trace_walk__finish(struct trace_walk *w);
/* "cuda ringbuf_full: 3, osrt agg_map_full: 1" into BUF; 0 when nothing was lost. */
int trace_walk__loss_summary(const struct trace_walk *w, char *buf, size_t len);
/*
 * F's reorder state (struct family_reorder) once the walk has read the whole file, for what
 * it counted (struct family_reorder's info hooks); NULL before, or when F has none.
 */
void *trace_walk__reorder_state(const struct trace_walk *w, const struct family *f);
void trace_walk__close(struct trace_walk *w);

#endif /* BPFSIGHT_TRACE_WALK_H */
