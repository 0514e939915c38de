/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gil family: CPython GIL waits (and holds in full mode) per thread, with the holder that
 * made each wait. Record side in gil.c (interpreters found by gil_python.c), decode side and
 * the gil_sum / gil_blocked_by / gil_procs reports in gil_report.c. docs/GIL.md.
 */
#ifndef BPFSIGHT_GIL_H
#define BPFSIGHT_GIL_H
#include "family.h"
#include "family_record.h"
#include "gil_records.h"
#include "report.h"

/* Waits and holds from this long on get a record of their own; all are summed in-kernel. */
#define GIL_THRESHOLD_NS 50000ull
/*
 * --stacks=gil: the holder sampler's period (cpu-clock ns), about 1 kHz, off the multiples of
 * the 5 ms switch interval so that its samples fall at every point of the holds.
 */
#define GIL_SAMPLE_NS 997000ull

extern const struct rec_decoder gil_decoders[];
extern const struct family_cumulative gil_cumulative[];
extern const struct report *const gil_reports[];
extern const struct report gil_stacks;	      /* gil_stacks_report.c (--stacks=gil) */
extern const struct family_export gil_export; /* gil_export.c */
extern const struct family_sql gil_sql;	      /* gil_sql.c */
extern const struct family family_gil;

/* Its options (gil_options.c). */
struct gil_opts {
	__u32 full; /* --gil-mode=full: every take_gil/drop_gil too (else the contended path) */
};
extern const struct family_option gil_options[];

/*
 * --stacks=gil: the waiting a HOLDER round or a timer SAMPLE record stands for, blamed on the
 * holder's code (its STACK_REF); 0 for any other record (gil_stacks_report.c).
 */
__u64 gil_holder_ns(const struct bs_hdr *rec);

/* "condwait", "take_gil", "no-gil", "none": BS_GIL_METHOD_* as gil_sum shows it. */
const char *gil_method_name(__u32 method);
/* PY_VERSION_HEX as gil_procs shows it: "3.11.7", "3.13" (no micro), "unknown" for 0. */
void gil_version_str(__u32 v, char *buf, size_t len);

extern const struct page_family gil_page; /* gil_page.c */

extern const struct metrics_family gil_metrics; /* gil_metrics.c */
extern const struct family_verdict gil_verdict; /* gil_verdict.c */
extern const struct top_family gil_top;		/* gil_top.c */

struct family_ledger;
extern const struct family_ledger gil_ledger; /* gil_ledger.c: the ledger's feed */
#endif
