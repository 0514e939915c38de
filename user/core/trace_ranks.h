/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ranks of a merged file (bpfsight merge, BS_REC_RANK): which file, host and rank each pid
 * namespace came from, and the label of each rank's process ("rank 3 @ node7"). The trace
 * model keeps one and answers for it (trace_model__rank, trace_model__process_name).
 */
#ifndef BPFSIGHT_TRACE_RANKS_H
#define BPFSIGHT_TRACE_RANKS_H

#include <linux/types.h>
#include "records.h"

struct trace_ranks;

/* One RANK record as a reader sees it: the record, its strings and the process's label. */
struct trace_rank {
	struct bs_rank r;
	const char *host; /* NULL when unknown */
	const char *path;
	const char *label; /* "rank 3 @ node7" ("file 3 @ node7" without a rank) */
	__u32 index;	   /* 0, 1, ... in file order */
};

struct trace_ranks *trace_ranks__new(void);
void trace_ranks__free(struct trace_ranks *t);
/* A RANK record, its strings HOST and PATH (NULL when unknown). -ENOMEM, -EINVAL or 0. */
int trace_ranks__add(struct trace_ranks *t, const struct bs_rank *r, const char *host,
		     const char *path);
/*
 * The rank PID is (its RANK record names it), else the first rank of PID's namespace (a
 * process beside the rank's, in its file), else NULL. Valid until trace_ranks__free.
 */
const struct trace_rank *trace_ranks__find(const struct trace_ranks *t, __u32 pid);
/* The RANK record naming PID itself, or NULL. */
const struct trace_rank *trace_ranks__of_pid(const struct trace_ranks *t, __u32 pid);
/* Every rank in file order: *I = 0 first; NULL at the end. */
const struct trace_rank *trace_ranks__next(const struct trace_ranks *t, __u32 *i);
__u32 trace_ranks__count(const struct trace_ranks *t);

/* How a file was aligned, by its BS_RANK_* flags: "reference", "collectives", "wall clock". */
static inline const char *trace_ranks__aligned_by(__u32 flags)
{
	if (flags & BS_RANK_REFERENCE)
		return "reference";
	return flags & BS_RANK_FINE ? "collectives" : "wall clock";
}

/*
 * A pid or tid of a merged file as its host saw it (NS << BS_RANK_NS_SHIFT | id there: the rank
 * tables show the host's, beside the rank's name and host); any other file's as it is.
 */
static inline __u32 trace_ranks__host_pid(__u32 pid)
{
	return pid & ((1u << BS_RANK_NS_SHIFT) - 1);
}

/* The namespace of a pid or tid of a merged file (0 in any other). */
static inline __u32 trace_ranks__ns(__u32 pid)
{
	return pid >> BS_RANK_NS_SHIFT;
}

#endif /* BPFSIGHT_TRACE_RANKS_H */
