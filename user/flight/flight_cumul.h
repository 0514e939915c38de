/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder's cumulative snapshots (a family's `cumulative` types: osrt's short
 * calls, gil's totals). They count since the recording began, so a dump cannot copy them:
 * they are kept here, out of the window's chunks, per key in time order with the last one
 * before the window, and a dump writes them counting from its window's start.
 */
#ifndef BPFSIGHT_FLIGHT_CUMUL_H
#define BPFSIGHT_FLIGHT_CUMUL_H

#include <linux/types.h>
#include "records.h"

struct flight_cumul;
struct trace_writer;

struct flight_cumul *flight_cumul__new(void);
void flight_cumul__free(struct flight_cumul *fc);
/* 1 when REC is a cumulative snapshot, now kept here (not to be appended), else 0. */
int flight_cumul__observe(struct flight_cumul *fc, const struct bs_hdr *rec);
/* Snapshots before OLDEST_TS are needed only as bases: keep the last per key. */
void flight_cumul__prune(struct flight_cumul *fc, __u64 oldest_ts);
/* Append each key's snapshots from FROM_TS on, counting from then. Count or -errno. */
long flight_cumul__write(struct flight_cumul *fc, struct trace_writer *w, __u64 from_ts);
__u64 flight_cumul__bytes(const struct flight_cumul *fc);

#endif /* BPFSIGHT_FLIGHT_CUMUL_H */
