/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A stats report: fed every record of a trace, then emits one table (nsys-like). */
#ifndef BPFSIGHT_REPORT_H
#define BPFSIGHT_REPORT_H

#include "records.h"
#include "trace_model.h"

struct table; /* table.h */
struct steps; /* steps.h */

/* `bpfsight info` shows the report's table, when it has rows: under TITLE, as KEY in JSON. */
struct report_info {
	const char *title; /* "cupti-shim" */
	const char *key;   /* "shim" */
};

#define REPORT_FOR_PEOPLE                                                                          \
	0x1		  /* table mode: rows as people read them (grouped, placeholders noted) */
#define REPORT_PYTHON 0x2 /* --python: Python frames only */

/* What stats was asked that changes a report's rows (docs/USAGE.md, "stats"). */
struct report_ask {
	unsigned flags;	      /* REPORT_* */
	const char *group_by; /* --group-by KEY[:N]: KEY, one of the report's group_by; or NULL */
	unsigned group_n;     /* its N (0: not given) */
	const char *peak;     /* --peak-tflops N|GPU as given, or NULL (docs/BLAS.md, "MFU") */
	const char *gpus;     /* the trace's GPUs (struct trace_meta.gpus), or NULL */
	/*
	 * The trace's steps, each process's from the source --steps chose (steps.h): what a
	 * per-step report asks. NULL: none known (emit called without stats).
	 */
	const struct steps *steps;
};

struct report {
	const char *name; /* "osrt_sum": nsys's name where one exists */
	const char *desc;
	void *(*new)(void);
	/* Every record, in file order, already checked against its decoder's min_size. */
	void (*add)(void *st, const struct bs_hdr *rec, const struct trace_model *m);
	/* Fill T with this report's columns and rows. Negative errno on failure. */
	int (*emit)(void *st, const struct trace_model *m, struct table *t);
	void (*free)(void *st);
	/*
	 * Instead of EMIT when set: the same, told what stats was asked (REPORT_*), for a report
	 * whose rows depend on it. May be NULL.
	 */
	int (*emit_for)(void *st, const struct trace_model *m, const struct report_ask *ask,
			struct table *t);
	/* Shown by `bpfsight info` too (what a trace's reader must know first). May be NULL. */
	const struct report_info *info;
	/*
	 * The keys --group-by gives this report ("shape", "stack:N": N required), NULL-ended;
	 * NULL: it takes none. Its emit_for reads the one asked in report_ask.
	 */
	const char *const *group_by;
};

#endif /* BPFSIGHT_REPORT_H */
