/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the exports of the CPU samples to one text file share (folded, svg): OUT created, the
 * samples counted per stack as they come (cpu_samples.h); each export writes in its finish.
 */
#ifndef BPFSIGHT_EXPORT_SAMPLES_H
#define BPFSIGHT_EXPORT_SAMPLES_H

#include <stdio.h>
#include "export.h"

struct cpu_samples;

struct samples_export {
	FILE *f;
	struct cpu_samples *counts;
	__u64 unit;	 /* a line's figure is its count / unit (1; off-CPU: ns -> us) */
	char title[128]; /* "CPU samples: <the recording's target>" */
};

/* An exporter's open/record/abort hooks. */
void *samples_export__open(const char *out, const struct trace_meta *meta,
			   const struct export_opts *opts, int *err);
int samples_export__record(void *st, const struct bs_hdr *rec, const struct event *ev,
			   const struct trace_model *m);
void samples_export__abort(void *st);
/*
 * Stack S's folded text, root first (KERNEL: a sample taken in kernel code, a "[kernel]" leaf;
 * S NULL or empty: "[no user stack]"): malloc'd, NULL without memory. ClickHouse's `stack`
 * rows carry it, for `stacks --from`.
 */
char *export_folded__line(const struct trace_stack *s, int kernel, const struct trace_model *m);

/* For finish: close OUT and free ST. Returns ERR, else the close's error. */
int samples_export__close(struct samples_export *st, int err);

#endif /* BPFSIGHT_EXPORT_SAMPLES_H */
