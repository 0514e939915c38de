/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who came last to each collective, and who waited (nccl_stragglers, nccl_rank_sum): the
 * calls of every rank of a communicator with the same sequence number are one collective
 * (nccl_coll.h). The rank that entered last held the others: each waited from its own entry
 * to that rank's. Works on one file holding every rank (a recording of a whole node) or on a
 * merged file (bpfsight merge: every rank on one clock). gloo's collectives (NCCL_F_GLOO) are
 * seen at their entry only (ProcessGroupGloo::nextTag): their entries are compared as NCCL's,
 * their records' ends are no ends (no end spread, no time inside).
 *
 * Memory: a fixed-size summary per collective (never per call: a collective's waits follow
 * from its count, the sum and the latest of its entries), and per rank process its totals.
 */
#ifndef BPFSIGHT_NCCL_STRAGGLE_H
#define BPFSIGHT_NCCL_STRAGGLE_H

#include "busy_union.h"
#include "nccl_coll.h"

/* One collective, over the ranks that recorded it. */
struct nccl_inst {
	__u64 group, seq;
	__u64 first_enter, last_enter; /* the earliest and the latest entry */
	__u64 sum_enter;	       /* of the entries less first_enter */
	__u64 min_end, max_end;
	__u32 fn;
	__u32 ranks; /* calls seen */
	__s32 nranks;
	__s32 last_rank; /* of the rank that entered last */
	__u32 last_pid;
	__u32 done;
	__u32 async; /* a gloo collective: min_end, max_end are its calls' returns, no ends */
};

/* The waits in a collective: every rank's, from its entry to the last one's. */
static inline __u64 nccl_inst__wait(const struct nccl_inst *i)
{
	return (__u64)i->ranks * (i->last_enter - i->first_enter) - i->sum_enter;
}

#define NCCL_FN_SLOTS 64 /* waits by function: entries of the nccl table past it are not split */

/* A rank process: its collectives, its time in them, the waits it caused. */
struct nccl_rank_tot {
	__u32 pid;
	__s32 rank, nranks; /* in its largest communicator */
	__u64 calls;
	__u64 async_calls;	/* of them gloo's, seen at their entry only: not in busy */
	struct busy_union busy; /* time inside collectives (overlapping calls counted once) */
	__u64 first_enter, last_end;
	__u64 late;	    /* collectives of 2 ranks or more it entered last */
	__u64 made_wait_ns; /* the others' waits in those */
	__u64 worst_wait_ns, worst_seq, worst_group;
	__u32 worst_fn;
	__u32 _pad;
	__u64 fn_wait[NCCL_FN_SLOTS]; /* made_wait_ns by function */
};

struct nccl_straggle;

struct nccl_straggle *nccl_straggle__new(void);
void nccl_straggle__free(struct nccl_straggle *s);
/* Every record in file order, after the model (whose nccl walk it reads). */
void nccl_straggle__add(struct nccl_straggle *s, const struct bs_hdr *rec,
			const struct trace_model *m);
/*
 * After the last record: close the collectives still open (ranks that never came) and hand
 * out the results, valid until free. 0 or a negative errno (what failed during the walk).
 */
int nccl_straggle__finish(struct nccl_straggle *s, struct nccl_inst ***insts, size_t *ninsts,
			  struct nccl_rank_tot ***ranks, size_t *nranks);

#endif /* BPFSIGHT_NCCL_STRAGGLE_H */
