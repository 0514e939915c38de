/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A hung job read from a hang trigger's dump (--trigger hang, snap_records.h), or from a merge
 * of several hosts' dumps: per rank process and communicator, the last collective it entered
 * and the last it left (nccl_coll.h's numbering, the same on every rank), the calls still in
 * flight when the trigger fired (BS_UCALL_OPEN), and where each thread was then (the
 * snapshot, trace_snaps.h). From these, per communicator whose ranks stopped at different
 * collectives: the collective the waiters are in, the ranks that never entered it, and for each
 * of those where it is instead (in another communicator's collective, or in code of its own:
 * its innermost Python function and line, its state and since when, the GIL's holder).
 * The report nccl_hang (nccl_hang_report.c) and the verdict's hang rule read it.
 */
#ifndef BPFSIGHT_NCCL_HANG_H
#define BPFSIGHT_NCCL_HANG_H

#include <stddef.h>
#include "nccl_decode.h"

/* One rank process on one communicator. */
struct hang_rank {
	__u64 group; /* the communicator (nccl_comm.group), 0 = none (a process without one) */
	__u64 comm;  /* its pointer in the process */
	__u32 pid, tid;
	__s32 rank, nranks; /* the communicator's, else the environment's (RANK), -1 unknown */
	int have_hash;
	__s64 entered; /* the last collective entered, -1 none */
	__u32 entered_fn;
	int entered_open; /* still in it when the trigger fired */
	int bytes_known;
	__u64 entered_ts, entered_bytes;
	__s64 left; /* the last collective left, -1 none */
	__u64 left_ts;
};

/* A communicator whose ranks stopped at different collectives. */
struct hang_coll {
	__u64 group;
	__s64 seq; /* the collective the waiters are in */
	__u32 fn;
	__s32 nranks;
	int have_hash;
	__u64 bytes; /* of the first waiter's call, when known */
	int bytes_known;
	__u64 waited_ns; /* the longest wait, to the waiter's snapshot */
	int on_gpu;	 /* the waiters' host calls returned: they wait on the GPU */
	size_t nwait, nmiss;
	const struct hang_rank *wait[64];
	__s32 miss[64]; /* ranks that never entered it */
};

struct nccl_hang;

struct nccl_hang *nccl_hang__new(void);
void nccl_hang__free(struct nccl_hang *h);
/* Every record in file order, after the model (whose nccl walk it reads). */
void nccl_hang__add(struct nccl_hang *h, const struct bs_hdr *rec, const struct trace_model *m);
/*
 * The same from a server's answer (stats --from: nccl_hang_state, 'r' rows per rank process and
 * communicator, 'o' rows per call in flight): 0 or -ENOMEM. The rule then reads H.
 */
struct table;
int nccl_hang__load(struct nccl_hang *h, const struct table *t);
int nccl_hang__loaded(const struct nccl_hang *h);
/* After the last record: 1 when the file holds a hang trigger's snapshot. */
int nccl_hang__has_snapshot(const struct nccl_hang *h, const struct trace_model *m);
/* Every rank process and communicator, by communicator then rank: *I = 0 first, NULL at the end. */
const struct hang_rank *nccl_hang__next(struct nccl_hang *h, const struct trace_model *m,
					size_t *i);
/* The hung communicators, the longest wait first: *N of them (valid until free). */
const struct hang_coll *nccl_hang__colls(struct nccl_hang *h, const struct trace_model *m,
					 size_t *n);
/*
 * What the rank process PID was doing when the trigger fired, for people: "it is in
 * `load_batch` (data.py:88), sleeping in read for 43.0 s" (or waiting for the GIL held by ...,
 * or in another communicator's collective). Into BUF.
 */
const char *nccl_hang__doing(struct nccl_hang *h, const struct trace_model *m, __u32 pid, char *buf,
			     size_t len);
/* The process of rank RANK of communicator GROUP in the file, 0 when none. */
__u32 nccl_hang__rank_pid(struct nccl_hang *h, const struct trace_model *m, __u64 group,
			  __s32 rank);
/* When PID's threads were read (its PROC_SNAP), else the snapshot's latest. */
__u64 nccl_hang__taken(const struct trace_model *m, __u32 pid);
/*
 * The calls in flight that are no collective (a CUDA synchronization, an NCCL init waiting for
 * its peers), the longest first: *I = 0 first; 0 at the end, else 1 with the thread, its
 * call's name and entry.
 */
int nccl_hang__next_open(struct nccl_hang *h, size_t *i, __u32 *pid, __u32 *tid, const char **name,
			 __u64 *ts);
/* The call of another uprobe-API family PID is in (cudaStreamSynchronize), or NULL. */
const char *nccl_hang__open_call(const struct nccl_hang *h, __u32 pid);
/* "ncclAllReduce" for the nccl table's entry FN. */
const char *nccl_hang__fn(__u32 fn, char *buf, size_t len);
/* Where thread TID of the snapshot is in the job's own code (stack_call__where), into BUF. */
const char *nccl_hang__where(const struct trace_model *m, __u32 tid, char *buf, size_t len);

#endif /* BPFSIGHT_NCCL_HANG_H */
