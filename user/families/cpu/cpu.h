/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cpu family: timer samples with stacks. Record side in cpu.c, decode side in cpu_report.c. */
#ifndef BPFSIGHT_CPU_H
#define BPFSIGHT_CPU_H
#include "family.h"
#include "family_record.h"
#include "cpu_records.h"
#include "report.h"
extern const struct rec_decoder cpu_decoders[];
extern const struct report *const cpu_reports[];
extern const struct family_verdict cpu_verdict; /* cpu_verdict.c */
extern const struct family family_cpu;

/* Its options (cpu_options.c). */
struct cpu_opts {
	__u32 hz; /* --sample-rate: samples per second of each CPU */
};
extern const struct family_option cpu_options[];
void cpu_opts_init(void *opts, const char *cmd);
void cpu_opts_describe(const void *opts, char *buf, size_t len);
extern const struct family_export cpu_export; /* cpu_export.c */
extern const struct family_sql cpu_sql;	      /* cpu_sql.c */
extern const struct page_family cpu_page;     /* cpu_page.c */
extern const struct top_family cpu_top;	      /* cpu_top.c: samples for top's function view */

struct family_ledger;
extern const struct family_ledger cpu_ledger; /* cpu_ledger.c: the ledger's feed */
#endif
