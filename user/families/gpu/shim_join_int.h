/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The launch join's state, shared by its files (shim_join.c: calls and API records,
 * shim_join_gpu.c: GPU records waiting for their API record). Not an API. */
#ifndef BPFSIGHT_SHIM_JOIN_INT_H
#define BPFSIGHT_SHIM_JOIN_INT_H

#include "shim_join.h"
#include "order_link.h"
#include "shim_join_calls.h"
#include "hmap.h"

/* What the join knows of one correlation id of a process. */
struct corr_slot {
	__u32 corr;
	__u32 tid;
	__u64 call_ts;
	__u16 flags; /* BS_GPU_CALL_*: how the API record was linked; 0 = not decided */
	__u8 why;    /* JOIN_WHY_* when flags is BS_GPU_CALL_API, or decided by order */
	__u8 order;  /* JOIN_ORDER_*: launch order's part in it */
	__u32 pend;  /* index + 1 of the newest waiting GPU record of this slot, 0 = none */
};

/*
 * corr_slot.order: DECIDED, launch order linked it (or found it has no call: flags 0); GUESS,
 * launch order's call is in tid/call_ts while API records (which decide) are still to come;
 * FILE, a file's record of the id came linked (tid/call_ts), kept to compare launch order
 * with, deciding nothing for other records.
 */
#define JOIN_ORDER_DECIDED 1
#define JOIN_ORDER_GUESS   2
#define JOIN_ORDER_FILE	   3

struct jproc {
	struct hmap *threads;	 /* (tid, 0) -> struct jthread */
	struct corr_slot *slots; /* JOIN_CORR_SLOTS, allocated with the first API or GPU record */
	__u64 calls;		 /* cuda calls of any thread ever seen */
	__u64 apis;		 /* API records ever seen: then they, not launch order, link */
};

#define PENDING_REC 128 /* the largest GPU record (bs_gpu_kernel: 112) */
#define HELD_REC    96	/* bs_gpu_api: 64, and room for fields a later version adds */

struct pending {
	__u64 since; /* queued at (now) */
	__u64 gen;   /* insertion number: chains only go to smaller ones */
	__u32 pid, corr;
	__u32 prev; /* index + 1 of the previous record in its slot's chain */
	__u32 live;
	__u64 rec[PENDING_REC / 8];
};

struct held {
	__u64 since;
	__u64 tried; /* the thread's appended count at the last try */
	__u32 live;
	__u32 counted; /* in its thread's nheld */
	__u64 rec[HELD_REC / 8];
};

struct shim_join {
	void (*emit)(void *arg, struct bs_hdr *rec);
	void *arg;
	struct hmap *procs;   /* (pid, 0) -> struct jproc * */
	struct pending *pend; /* ring of JOIN_PENDING */
	__u32 head, count;
	__u64 gen;
	struct held *held; /* ring of JOIN_HELD */
	__u32 hhead, hcount;
	__u64 ncalls;	  /* calls kept, all threads */
	__u64 last_sweep; /* now of the last trim of every thread */
	int no_calls;	  /* shim_join__no_calls: decide every API record as it comes */
	int order_always; /* shim_join__order_always: launch order for every process */
	struct shim_join_stats st;
	struct order_link *order;
	__u8 launches[1024]; /* cuda_table fn -> 1 when it puts work on the GPU */
};

struct jproc *join_proc(struct shim_join *j, __u32 pid, int create);
struct corr_slot *join_slot(struct shim_join *j, __u32 pid, __u32 corr);
/* Write a GPU record linked as slot S says (NULL: unlinked, no API record). */
void join_link_emit(struct shim_join *j, struct bs_hdr *rec, const struct corr_slot *s);
/* The GPU records waiting for S's id (S just decided), newest to oldest. */
void join_release_chain(struct shim_join *j, __u32 pid, struct corr_slot *s);
/* Emit unlinked every waiting GPU record of PID (all when PID is 0). */
void join_pending_drop_pid(struct shim_join *j, __u32 pid);
void join_pending_expire(struct shim_join *j, __u64 now, int all);
/* S is being decided as CORR's link to (TID, CALL_TS): compare launch order's guess. */
void join_order_check(struct shim_join *j, const struct corr_slot *s, __u32 corr, __u32 tid,
		      __u64 call_ts);
/* Whether PID's calls and ops go to launch order: it sent no API records, or order_always. */
int join_wants_order(struct shim_join *j, __u32 pid);
/* order_link_fn: an op's call by launch order (TID 0: none). */
void join_order_decided(void *arg, __u32 pid, __u32 corr, __u32 tid, __u64 call_ts);

#endif /* BPFSIGHT_SHIM_JOIN_INT_H */
