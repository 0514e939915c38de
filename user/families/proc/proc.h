/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * proc pseudo-family (always on): process/thread lifecycle from BPF, metadata snapshots
 * from /proc, strings and loss records. Record side in proc.c, decode side in
 * proc_report.c.
 */
#ifndef BPFSIGHT_PROC_H
#define BPFSIGHT_PROC_H
#include "family.h"
#include "report.h"
extern const struct rec_decoder proc_decoders[];
extern const struct report *const proc_reports[];
extern const struct family_export proc_export; /* proc_export.c */
extern const struct family_sql proc_sql;       /* proc_sql.c */
extern const struct family family_proc;
/* proc_snap.c: the hang trigger's snapshot (snap_records.h) as events. */
int proc__decode_proc_snap(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev);
int proc__decode_thread_snap(const struct bs_hdr *rec, const struct trace_model *m,
			     struct event *ev);
extern const struct export_style proc_snap_style;
/* ledger_rows.c: the ledger's critical unit as rows of proc's own (EX_ROWS). */
struct ex_sink;
void *proc_ledger_rows__new(void);
void proc_ledger_rows__free(void *st);
int proc_ledger_rows__record(struct ex_sink *s, void *st, const struct bs_hdr *rec);
int proc_ledger_rows__end(struct ex_sink *s, void *st);
struct family_ledger;
extern const struct family_ledger proc_ledger; /* proc_ledger.c: the ledger's feed */
/* py_unread_report.c: the pythons whose frames were not read, said under the verdict's claims. */
extern const struct report py_unread_report;
struct verdict;
void py_unread__claims(struct verdict *v);
#endif
