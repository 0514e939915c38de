/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* osrt family: syscall latency. Record side in osrt.c, decode side in osrt_report.c. */
#ifndef BPFSIGHT_OSRT_H
#define BPFSIGHT_OSRT_H
#include "family.h"
#include "report.h"
extern const struct rec_decoder osrt_decoders[];
extern const struct family_cumulative osrt_cumulative[];
extern const struct report *const osrt_reports[];
extern const struct sqlite_family osrt_sqlite; /* export_sqlite_osrt.c */
extern const struct family family_osrt;
#endif
