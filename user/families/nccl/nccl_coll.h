/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Collectives as the ranks of a job see them: each collective call the application made
 * (depth 0, succeeded) with its communicator's name in every process (struct nccl_comm.group),
 * its sequence number there, when the rank entered it and when it ended. A call inside
 * ncclGroupStart/ncclGroupEnd only queues its work: it ends when the outermost ncclGroupEnd of
 * its thread returns. What merge aligns clocks on (the sync points of nccl_sync.c) and what the
 * straggler reports compare across ranks.
 */
#ifndef BPFSIGHT_NCCL_COLL_H
#define BPFSIGHT_NCCL_COLL_H

#include "nccl_decode.h"

struct nccl_coll {
	__u64 group; /* the communicator (nccl_comm.group) */
	__u64 seq;
	__u64 enter_ts, end_ts;
	__u64 launch_ts; /* where its GPU work was launched from: itself, or its ncclGroupEnd */
	__u32 pid, tid;
	__s32 rank, nranks; /* -1 = unknown */
	__u32 fn;	    /* the nccl table's entry */
	__u32 inferred;	    /* nccl_comm.inferred */
	/* A gloo collective (NCCL_F_GLOO): seen at its entry only, end_ts is no end. */
	__u32 async;
	__u32 _pad;
};

typedef void (*nccl_coll_fn)(void *arg, const struct nccl_coll *c);

struct nccl_colls;

struct nccl_colls *nccl_colls__new(void);
void nccl_colls__free(struct nccl_colls *t);
/*
 * REC, after the walk W observed it: hands FN each collective whose end REC tells (itself, or
 * the calls of the group an ncclGroupEnd closes). 0 or -ENOMEM.
 */
int nccl_colls__observe(struct nccl_colls *t, const struct nccl_walk *w, const struct bs_hdr *rec,
			nccl_coll_fn fn, void *arg);
/* Calls still waiting for their group's end (a group open when the recording stopped). */
__u64 nccl_colls__pending(const struct nccl_colls *t);

#endif /* BPFSIGHT_NCCL_COLL_H */
