/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --capture-range: keep only the events that happen inside ranges a family opens and closes
 * (cudaProfilerStart/Stop, NVTX ranges of a given name), as nsys does; several ranges may
 * follow one another. Metadata (strings, processes, threads, symbols, losses, lifecycle) is
 * always kept so the events that are kept can be named.
 *
 * Records reach user space when a call returns, not when it starts, so a range is judged by
 * timestamps: an event is kept when its start lies inside a range that is open or was
 * closed. An event that starts inside a range is kept even if it ends after the range.
 */
#ifndef BPFSIGHT_CAPTURE_GATE_H
#define BPFSIGHT_CAPTURE_GATE_H

#include <linux/types.h>
#include "records.h"

struct capture_gate;

struct capture_gate *capture_gate__new(void);
void capture_gate__free(struct capture_gate *g);
/* A range opens at TS (nested opens count: the range closes with the last close). */
void capture_gate__open(struct capture_gate *g, __u64 ts);
void capture_gate__close(struct capture_gate *g, __u64 ts);
/* 1 to write REC, 0 to drop it. */
int capture_gate__keep(struct capture_gate *g, const struct bs_hdr *rec);
/* Events dropped so far (outside every range), for `info`. */
__u64 capture_gate__dropped(const struct capture_gate *g);
/* Ranges opened so far (nested opens count once): 0 = nothing was captured. */
__u64 capture_gate__opened(const struct capture_gate *g);
/* How long the ranges lasted: the closed ones, and the open one until NOW. */
__u64 capture_gate__kept_ns(const struct capture_gate *g, __u64 now);
/* 1 when records of TYPE are events the ranges judge, 0 when they are kept whatever. */
int capture_gate__judges(const struct capture_gate *g, __u16 type);
/*
 * FN(ARG, START, END) as each range closes, at once, from the capture_gate__close that
 * closes it (a file per range: capture_files.h). NULL: none.
 */
typedef void (*capture_gate_closed_fn)(void *arg, __u64 start, __u64 end);
void capture_gate__on_close(struct capture_gate *g, capture_gate_closed_fn fn, void *arg);

#endif /* BPFSIGHT_CAPTURE_GATE_H */
