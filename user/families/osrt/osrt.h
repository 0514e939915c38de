/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* osrt family: syscall latency. Record side in osrt.c, decode side in osrt_report.c. */
#ifndef BPFSIGHT_OSRT_H
#define BPFSIGHT_OSRT_H
#include "family.h"
#include "family_record.h"
#include "osrt_records.h"
#include "report.h"
extern const struct rec_decoder osrt_decoders[];
extern const struct family_cumulative osrt_cumulative[];
extern const struct report *const osrt_reports[];
extern const struct family_export osrt_export; /* osrt_export.c */
extern const struct family_sql osrt_sql;       /* osrt_sql.c */
extern const struct family family_osrt;

/* Its options (osrt_options.c). */
enum osrt_mode { OSRT_MODE_AUTO, OSRT_MODE_EXACT, OSRT_MODE_BLOCKED };
struct osrt_opts {
	__u64 threshold_ns; /* --osrt-threshold: shorter calls are only counted in the kernel */
	__u32 mode;	    /* --osrt-mode, enum osrt_mode */
	__u32 always_on;    /* the command is monitor */
};
extern const struct family_option osrt_options[];
void osrt_opts_init(void *opts, const char *cmd);
void osrt_opts_describe(const void *opts, char *buf, size_t len);
const struct osrt_opts *osrt_opts(const struct record_opts *o);
/* --osrt-mode as this recording resolves it: 1 blocked, 0 exact; WHY says why (for the log). */
int osrt_blocked(const struct record_opts *o, const char **why);
extern const struct page_family osrt_page; /* osrt_page.c */

extern const struct metrics_family osrt_metrics; /* osrt_metrics.c */
extern const struct family_verdict osrt_verdict; /* osrt_verdict.c */
extern const struct top_family osrt_top;	 /* osrt_top.c */

struct family_ledger;
extern const struct family_ledger osrt_ledger; /* osrt_ledger.c: the ledger's feed */
#endif
