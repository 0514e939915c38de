/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The snapshots of the job's threads as a reader keeps them (snap_records.h: PROC_SNAP,
 * THREAD_SNAP): the hang trigger's (the latest of each process and of each thread, for whoever
 * asks where the job's threads were when it stalled) and, apart, those of the recording's
 * edges (BS_SNAP_AT_START, _AT_END: what was open when it began and ended). The trace model
 * keeps one (trace_model__snaps).
 */
#ifndef BPFSIGHT_TRACE_SNAPS_H
#define BPFSIGHT_TRACE_SNAPS_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct trace_snaps;

struct trace_snaps *trace_snaps__new(void);
void trace_snaps__free(struct trace_snaps *t);
/* A PROC_SNAP or THREAD_SNAP record (of at least its size): -ENOMEM or 0. */
int trace_snaps__add(struct trace_snaps *t, const struct bs_hdr *rec);
/* PID's PROC_SNAP, NULL when the snapshot did not read it. */
const struct bs_proc_snap *trace_snaps__proc(const struct trace_snaps *t, __u32 pid);
/* Thread TID's THREAD_SNAP, NULL when none. */
const struct bs_thread_snap *trace_snaps__thread(const struct trace_snaps *t, __u32 tid);
/* Every THREAD_SNAP in the order first seen: *I = 0 first; NULL at the end. */
const struct bs_thread_snap *trace_snaps__next_thread(const struct trace_snaps *t, size_t *i);
/* Every PROC_SNAP in the order first seen: *I = 0 first; NULL at the end. */
const struct bs_proc_snap *trace_snaps__next_proc(const struct trace_snaps *t, size_t *i);
/* When the trigger's snapshot was taken (its latest PROC_SNAP), 0 when the file has none. */
__u64 trace_snaps__taken(const struct trace_snaps *t);
/* The same at a recording's edge EDGE (BS_SNAP_AT_START or BS_SNAP_AT_END). */
const struct bs_thread_snap *trace_snaps__thread_at(const struct trace_snaps *t, __u32 tid,
						    __u32 edge);
const struct bs_proc_snap *trace_snaps__proc_at(const struct trace_snaps *t, __u32 pid, __u32 edge);
const struct bs_thread_snap *trace_snaps__next_thread_at(const struct trace_snaps *t, __u32 edge,
							 size_t *i);
const struct bs_proc_snap *trace_snaps__next_proc_at(const struct trace_snaps *t, __u32 edge,
						     size_t *i);
/*
 * Thread read asleep at the start (A) and at the end (B) in the same call, its CPU time
 * unchanged: it never ran between (the scheduler's runtime moves with any run, however short).
 * Its off-CPU times are not compared: each is read against its CPU's clock as last updated,
 * tens of ms apart on a loaded machine.
 */
int trace_snaps__blocked(const struct bs_thread_snap *a, const struct bs_thread_snap *b);
/* When edge EDGE was read (its first process), 0 when the file has none. */
__u64 trace_snaps__edge_ts(const struct trace_snaps *t, __u32 edge);

#endif /* BPFSIGHT_TRACE_SNAPS_H */
