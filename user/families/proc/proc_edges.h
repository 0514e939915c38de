/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What was open at a recording's edges (snap_records.h: the THREAD_SNAPs flagged
 * BS_SNAP_AT_START and _AT_END, user/session/recorder_edges.c): per thread, where it was when
 * the recording began and when it ended, and whether it moved between the two. A thread
 * blocked in a read for the whole recording, or a rank waiting in a collective it entered
 * before the probes existed, writes no record of its own: this is what says so.
 *
 * The report `open_at_edges` (a row per thread read at the end), and the rules the verdict
 * takes from it (proc_edges_verdict.c): a main thread blocked for the whole recording, and a
 * job whose ranks all stood still, some waiting in a collective, some elsewhere (a hang found
 * on arrival, on any backend).
 */
#ifndef BPFSIGHT_PROC_EDGES_H
#define BPFSIGHT_PROC_EDGES_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "verdict.h"

struct trace_model;
struct trace_stack;
struct proc_edges;

/* One thread at both edges, as the report and the rules read it. */
struct edge_thread {
	__u32 pid, tid;
	const struct bs_thread_snap *start, *end; /* NULL: not read at that edge */
	__u64 calls; /* calls of an API family it completed in the recording (depth 0) */
	int blocked; /* asleep at both edges in the same call, its CPU time unchanged */
	int stuck;   /* blocked, or in the same call at the same line at both edges, no call done */
	__u64 since_ns; /* blocked: how long before the start (its off-CPU time then) */
};

struct proc_edges *proc_edges__new(void);
void proc_edges__free(struct proc_edges *e);
/* Every record of the pass: the API calls each thread completed. */
void proc_edges__add(struct proc_edges *e, const struct bs_hdr *rec, const struct trace_model *m);
/*
 * The same from a server's answer (stats --from: open_at_edges_state, per thread its calls done
 * and in flight): 0 or -ENOMEM. Its rules then read E (proc_edges__loaded).
 */
struct table;
int proc_edges__load(struct proc_edges *e, const struct table *t);
int proc_edges__loaded(const struct proc_edges *e);
/* Calls in flight (BS_UCALL_OPEN) the file holds: a hang trigger's, or the end's. */
__u64 proc_edges__open_calls(const struct proc_edges *e);
/* The snapshot the report reads as the end: BS_SNAP_AT_END, else 0 (a trigger's), else -1. */
int proc_edges__last(const struct trace_model *m);
/* The file has both edges: 1 and their times. */
int proc_edges__window(const struct trace_model *m, __u64 *start, __u64 *end);
/* Thread TID of PID at both edges (its fields filled), 0 when it was not read at the end (or at
 * a trigger's snapshot, when the file has no end edge). */
int proc_edges__thread(struct proc_edges *e, const struct trace_model *m, __u32 pid, __u32 tid,
		       struct edge_thread *out);
extern const struct report open_at_edges_report;
extern const struct family_verdict proc_verdict;

/* proc_straggler.c: the straggler rule (rank_waits.h's state), run beside the edges' rules. */
void proc_straggler__claims(struct verdict *v);

#endif /* BPFSIGHT_PROC_EDGES_H */
