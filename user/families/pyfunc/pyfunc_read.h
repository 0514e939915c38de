/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pyfunc family's reading side (issue #41): every call of the Python functions a user
 * names (--python-functions), one BS_REC_PYFUNC_CALL record per piece (bpf/pyfunc_records.h).
 * Decoders in pyfunc_decode.c, the pieces' nesting in pyfunc_calls.c, reports in
 * pyfunc_report.c (cProfile's view), pyfunc_step_report.c (per torch step) and
 * pyfunc_missing_report.c (the entries never found, and why), the SQLite
 * table in pyfunc_export.c; Chrome and Perfetto draw the calls by their style.
 * docs/PYFUNC.md for users.
 */
#ifndef BPFSIGHT_PYFUNC_READ_H
#define BPFSIGHT_PYFUNC_READ_H

#include "family.h"
#include "report.h"
#include "pyfunc_records.h"

/* "return", "unwind", "yield", "open": how a piece ended (BS_PYFUNC_END_*), dump's text. */
const char *pyfunc_end_name(__u8 end);
/*
 * A never-found STATUS's detail "never found: MODULE:QUALNAME: why" into *FUNCTION and *WHY
 * (malloc'ed): 0, -EINVAL (not one; nothing allocated) or -ENOMEM.
 */
int pyfunc_never_found__split(const char *text, char **function, char **why);
/* 1 when REC is a call piece this reader can use (type and size). */
int pyfunc_call__valid(const struct bs_hdr *rec);

extern const struct rec_decoder pyfunc_decoders[];  /* pyfunc_decode.c */
extern const struct report *const pyfunc_reports[]; /* pyfunc_report.c */
extern const struct report pyfunc_step_sum;	    /* pyfunc_step_report.c */
extern const struct report pyfunc_not_found;	    /* pyfunc_missing_report.c */
extern const struct family_export pyfunc_export;    /* pyfunc_export.c */

#endif /* BPFSIGHT_PYFUNC_READ_H */
