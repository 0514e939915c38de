/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The toy family of tests/unit/test_family_toy.c: a whole family in a folder of its own, as
 * user/families/NAME/ is (its records would be in bpf/toy_records.h; it has no BPF side).
 */
#ifndef BPFSIGHT_TOY_H
#define BPFSIGHT_TOY_H

#include "family.h"
#include "family_record.h"

#define TOY_REC	 0xff0 /* the tests' block (records.h): a type wider than a byte */
#define TOY_LOSS 0xf9  /* its own loss cause: a number no family of the product uses */

struct toy_tick {
	struct bs_hdr h;
	__u64 dur;
	__u64 value;
};

/* toy_sum: ticks and the sum of their values. */
struct toy_sum {
	__u64 n, total;
};

/* Its option, --toy-scale N: what the metrics multiply the ticks' values by. */
struct toy_opts {
	__u64 scale;
};

extern const struct family family_toy;
extern const struct export_style toy_style;
extern const struct rec_decoder toy_decoders[];
extern const struct report *const toy_reports[];
extern const struct family_option toy_options[];
void toy_opts_init(void *opts, const char *cmd);
void toy_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m);
extern const struct family_record toy_recording;     /* toy_record.c */
extern const struct family_stats toy_stats;	     /* toy_report.c */
extern const struct family_export toy_export;	     /* toy_export.c */
extern const struct exporter *const toy_exporters[]; /* toy_export.c */
extern const struct metrics_family toy_metrics;	     /* toy_metrics.c */
extern const struct top_family toy_top;		     /* toy_top.c */
extern const struct page_family toy_page;	     /* toy_page.c */
extern const struct family_verdict toy_verdict;	     /* toy_verdict.c */
extern const struct family_reorder toy_reorder;	     /* toy_info.c */

#endif /* BPFSIGHT_TOY_H */
