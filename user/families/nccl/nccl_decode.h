/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading side of the nccl family, shared by its API table (the keys its specs name), its
 * decoder and walk (nccl_decode.c) and its reports (nccl_report.c): one call, read through
 * its compiled argument spec, and what the walk knew when it observed it.
 */
#ifndef BPFSIGHT_NCCL_DECODE_H
#define BPFSIGHT_NCCL_DECODE_H

#include "nccl.h"
#include "hmap.h"

/* The keys of nccl specs (nccl_keys, nccl_api.c, says what each is). */
enum nccl_key {
	K_SENDBUFF,
	K_RECVBUFF,
	K_BUFF,
	K_COUNT,
	K_DATATYPE,
	K_OP,
	K_ROOT,
	K_PEER,
	K_COMM,
	K_NEWCOMM,
	K_STREAM,
	K_RANK,
	K_NRANKS,
	K_NDEV,
	K_DEVLIST,
	K_COLOR,
	K_KEY,
	K_CONFIG,
	K_EXCLUDE,
	K_NEXCLUDE,
	K_NID,
	K_FLAGS,
	K_SIZE,
	K_HANDLE,
	K_DEVICE,
	K_UNIQUE_ID,
	K_COMMS,
	K_WORK,
	K_NR,
};

extern const struct ucall_key nccl_keys[K_NR];

#define NCCL_MAX_FIELDS 12

/* One call, its spec applied to its record. */
struct nccl_call {
	const struct bs_ucall *r;
	const struct ucall_api *api; /* NULL: a function of a newer table */
	__s32 ret;		     /* ncclResult_t is an int: rax's upper half is undefined */
	int ok;			     /* ncclSuccess or ncclInProgress */
	int open;		     /* in flight when written (BS_UCALL_OPEN): no ret, no out */
	__u32 depth;		     /* calls of the family enclosing it */
	__u32 have;		     /* 1u << K_*: fields with a value */
	__u64 v[K_NR];		     /* K_UNIQUE_ID: the hash; K_COMMS: how many follow */
	__u8 order[NCCL_MAX_FIELDS]; /* the fields in args order */
	__u32 nfields;
	int out_key;	   /* the field shown from bs_ucall.out, -1 = none */
	const __u8 *deref; /* NULL when the record has no (complete) copy */
	__u32 deref_len;
};

/* Parse REC (a BS_REC_NCCL_CALL of at least sizeof(struct bs_ucall)) into C. */
void nccl_call__parse(const struct bs_hdr *rec, struct nccl_call *c);
/* count x type size, or 0 when either is unknown (*KNOWN = 0). */
__u64 nccl_call__bytes(const struct nccl_call *c, int *known);
/* A collective or point-to-point call? */
int nccl_call__is_op(const struct nccl_call *c);

/*
 * The walk. Records are written at return, so a thread's records come in the order its calls
 * returned: a group's ncclGroupStart before the calls inside it, its ncclGroupEnd after them.
 */

/* What the walk knew about the record it observed last. */
struct nccl_ctx {
	__u64 ts; /* identifies the record: ts, pid, tid */
	__u32 pid, tid;
	__u32 group_depth;
	__u32 have_comm;
	__u64 group_start_ts;  /* ncclGroupEnd: entry of the matching ncclGroupStart, 0 = unknown */
	struct nccl_comm comm; /* the comm argument, when have_comm */
	/*
	 * A collective the application made (depth 0) that succeeded, or that was still in flight
	 * (open): its sequence number on its communicator, the same on every rank (comm.group
	 * names the communicator); -1 for any other call.
	 */
	__s64 coll_seq;
	int open; /* the call had not returned (BS_UCALL_OPEN): it has no end */
	/*
	 * A gloo collective's end (NCCL_F_GLOO_DONE, on a worker thread): coll_seq and comm are
	 * the collective's, ENTER_TS its nextTag's entry (the rank's arrival); the record's entry
	 * is the end. 0 when the walk did not see its work made (nextTag, then the work).
	 */
	__u32 gloo_end;
	__u32 _pad;
	__u64 enter_ts;
};

/* A gloo collective's work, from nextTag to the worker's finish (nccl.h, NCCL_F_GLOO_WORK). */
struct nccl_gloo_work {
	__u64 comm;	/* its process group, as the process names it */
	__u64 enter_ts; /* nextTag's entry */
	__u32 tag;
	__u32 _pad;
};

struct nccl_walk {
	struct hmap *by_ptr;	/* {pid, comm} -> __u32 serial of the current instance */
	struct hmap *by_serial; /* {serial, 0} -> struct nccl_comm */
	struct hmap *threads;	/* {pid, tid} -> struct nccl_thread */
	struct hmap *inferred;	/* {pid, 0} -> __u32: communicators of unseen creation so far */
	struct hmap *bases;	/* {pid, group} -> __u64: a merged file's SYNC_BASE */
	struct hmap *works;	/* {pid, work} -> struct nccl_gloo_work: gloo's, in flight */
	__u32 next_serial;
	int err;
	int have_last;
	struct nccl_ctx last;
	struct nccl_call call; /* the last record, parsed */
};

/* The walk's context for REC, when REC is the record it observed last. */
const struct nccl_ctx *nccl_walk__ctx(const struct nccl_walk *w, const struct bs_hdr *rec);

#endif /* BPFSIGHT_NCCL_DECODE_H */
