/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A stats report: fed every record of a trace, then emits one table (nsys-like). */
#ifndef BPFSIGHT_REPORT_H
#define BPFSIGHT_REPORT_H

#include "records.h"
#include "trace_model.h"

struct table; /* table.h */

/* `bpfsight info` shows the report's table, when it has rows: under TITLE, as KEY in JSON. */
struct report_info {
	const char *title; /* "cupti-shim" */
	const char *key;   /* "shim" */
};

#define REPORT_FOR_PEOPLE                                                                          \
	0x1		  /* table mode: rows as people read them (grouped, placeholders noted) */
#define REPORT_PYTHON 0x2 /* --python: Python frames only */

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
	int (*emit_for)(void *st, const struct trace_model *m, unsigned flags, struct table *t);
	/* Shown by `bpfsight info` too (what a trace's reader must know first). May be NULL. */
	const struct report_info *info;
};

#endif /* BPFSIGHT_REPORT_H */
