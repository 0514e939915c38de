/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cpu family: timer samples with stacks. Record side in cpu.c, decode side in cpu_report.c. */
#ifndef BPFSIGHT_CPU_H
#define BPFSIGHT_CPU_H
#include "family.h"
#include "report.h"
extern const struct rec_decoder cpu_decoders[];
extern const struct report *const cpu_reports[];
extern const struct family family_cpu;
extern const struct sqlite_family cpu_sqlite; /* export_sqlite_cpu.c */
#endif
