/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rank_waits (rank_waits_report.c): where a job's ranks wait, on any backend. Each rank's main
 * thread's off-CPU intervals that carry a stack (sched's, on by default for a job's threads),
 * split into those in a collective (an NCCL call, or torch.distributed's: gloo, a store's
 * barrier: stack_call__in) and the rest, by the line of the job's own code. The verdict's
 * straggler rule (proc_straggler.c) reads the report's state.
 */
#ifndef BPFSIGHT_RANK_WAITS_H
#define BPFSIGHT_RANK_WAITS_H

#include <linux/types.h>
#include "records.h"
#include "report.h"

struct hmap;
struct trace_model;

#define RANK_WAITS_CALL 64

/* A main thread's off-CPU time with stacks: in collectives, and elsewhere by its own line. */
struct main_waits {
	__u64 coll_ns, coll_count;
	char call[RANK_WAITS_CALL];	/* the collective it waits in (the first seen) */
	const struct bs_frame *coll_at; /* its line in the job's code */
	__u64 born, died;		/* its fork and exit, when inside the recording */
};

struct rank_waits {
	struct hmap *calls;	/* {stack pointer, 0} -> what the stack is in, once per stack */
	struct hmap *mains;	/* {pid, 0} -> main_waits */
	struct hmap *elsewhere; /* {pid, own frame} -> __u64 ns: off-CPU outside collectives */
};

/* A rank of the job: its pid and RANK (else LOCAL_RANK), from the edges' (or a trigger's)
 * snapshots. */
struct rank_of {
	__u32 pid;
	__s32 rank;
};

/* The job's ranks into R (at most MAX), by rank: how many. */
size_t rank_waits__ranks(const struct trace_model *m, struct rank_of *r, size_t max);
/* PID's largest off-CPU line outside collectives: its frame and *NS; NULL when none. */
const struct bs_frame *rank_waits__elsewhere(const struct rank_waits *w, __u32 pid, __u64 *ns);

extern const struct report rank_waits_report;

#endif /* BPFSIGHT_RANK_WAITS_H */
