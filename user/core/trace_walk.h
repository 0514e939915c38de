/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The reading loop info, dump and stats share: open with a useful error, feed every record
 * to the model, set aside records too short for their type, count losses, and at the end
 * say what was missing and which exit status that deserves (commands.h).
 */
#ifndef BPFSIGHT_TRACE_WALK_H
#define BPFSIGHT_TRACE_WALK_H

#include <linux/types.h>
#include "family.h"
#include "trace_model.h"
#include "trace_reader.h"
#include "shim_relink.h"

#define TRACE_WALK_LOSSES 32

struct trace_walk {
	const char *cmd; /* "info", for messages */
	const char *path;
	struct trace_reader *r;
	struct trace_model *m;
	__u64 short_records;	     /* records shorter than their decoder's min_size */
	__u64 lost[BS_LOSS_MAX + 1]; /* BS_REC_LOSS counts by cause; [BS_LOSS_MAX]: unknown ones */
	__u64 lost_total;
	struct shim_relink *relink; /* the launch join recomputed (NULL: out of memory) */
	int ended;
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
};

/* 0, or EXIT_READ_FAIL after printing "bpfsight CMD: PATH: reason" on stderr. */
int trace_walk__open(struct trace_walk *w, const char *cmd, const char *path);
/*
 * Next record in file order (GPU and CUPTI API records when their launch join decided them,
 * see shim_relink.h), already observed by the model. *DEC = its decoder (NULL for a
 * type no family knows). Returns 1 for a record, 2 for one shorter than its decoder needs
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
/* The recomputed launch join's counts (all 0 before the end). */
void trace_walk__links(const struct trace_walk *w, struct shim_join_stats *s);
void trace_walk__close(struct trace_walk *w);

#endif /* BPFSIGHT_TRACE_WALK_H */
