/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* sched family: off-CPU intervals. Record side in sched.c, decode side in sched_report.c. */
#ifndef BPFSIGHT_SCHED_H
#define BPFSIGHT_SCHED_H
#include "family.h"
#include "sched_records.h"
#include "report.h"
extern const struct rec_decoder sched_decoders[];
extern const struct report *const sched_reports[];
extern const struct report offcpu_stacks; /* sched_stacks_report.c (--stacks=sched) */
struct bs_offcpu;
struct trace_model;
/* O's run slice before it (oncpu_ns) inside the recording only: sched_report.c. */
__u64 sched__oncpu_in(const struct bs_offcpu *o, const struct trace_model *m);
extern const struct family_export sched_export; /* sched_export.c */
extern const struct family_sql sched_sql;	/* sched_sql.c */
extern const struct family family_sched;
extern const struct page_family sched_page; /* sched_page.c */

extern const struct metrics_family sched_metrics; /* sched_metrics.c */
extern const struct family_verdict sched_verdict; /* sched_verdict.c */

struct family_ledger;
extern const struct family_ledger sched_ledger; /* sched_ledger.c: the ledger's feed */
#endif
