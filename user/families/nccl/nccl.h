/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nccl family: NCCL API calls (collectives, point-to-point, groups, communicator lifetime),
 * traced by uprobes on libnccl wherever it is mapped (shared, or linked into e.g.
 * libtorch_cuda.so). Record side in nccl.c, the API table in nccl_api.c, the decoder and
 * the communicator/group walk in nccl_decode.c, the reports in nccl_report.c. docs/NCCL.md
 * for users.
 */
#ifndef BPFSIGHT_NCCL_H
#define BPFSIGHT_NCCL_H

#include <stddef.h>
#include "family.h"
#include "nccl_records.h"
#include "report.h"
#include "ucall_api.h"

/* ucall_api.group of an nccl API. */
enum nccl_group {
	NCCL_GRP_OTHER = 0,
	NCCL_GRP_INIT,	/* creates communicators: ncclCommInit*, ncclCommSplit, ncclCommShrink */
	NCCL_GRP_COMM,	/* queries, registration and teardown of a communicator */
	NCCL_GRP_GROUP, /* ncclGroupStart / ncclGroupEnd */
	NCCL_GRP_COLL,	/* collectives */
	NCCL_GRP_P2P,	/* ncclSend / ncclRecv */
};

/* ucall_api.flags of an nccl API. */
#define NCCL_F_GROUP_START 0x0001 /* opens a group on the calling thread */
#define NCCL_F_GROUP_END   0x0002 /* closes the innermost one */
/*
 * c10d::ProcessGroupGloo (torch.distributed's gloo backend, libtorch_cpu): no ncclResult_t;
 * its comm is the process group (`this`). Its collectives' work runs on gloo's threads: the
 * call the job waits in is not this one, so the record's entry is the rank's arrival and its
 * return is no end.
 */
#define NCCL_F_GLOO 0x0004
/*
 * ProcessGroupGloo::nextTag, called once by each gloo collective that exchanges data, stands
 * for the collective: it returns the collective's tag, equal on every rank.
 */
#define NCCL_F_GLOO_TAG 0x0008
/*
 * The end of a gloo collective, for merge's clock fit (docs/NCCL.md, "gloo"): its work object
 * (ProcessGroupGloo::AsyncWork, key work) is created by the collective's thread right after
 * nextTag (GLOO_WORK: the walk ties the work to the tag), and finished on one of the process
 * group's worker threads once its run returned (GLOO_DONE: that entry is the rank's end of the
 * collective, the instant every rank shares). Both with NCCL_F_GLOO: no ncclResult_t.
 */
#define NCCL_F_GLOO_WORK 0x0010
#define NCCL_F_GLOO_DONE 0x0020

/* ncclResult_t values the decoder treats as success (nccl.h). */
#define NCCL_SUCCESS	 0
#define NCCL_IN_PROGRESS 7 /* nonblocking communicator: the handle is valid, init goes on */
#define NCCL_ID_BYTES	 128

extern const struct ucall_table nccl_table; /* nccl_api.c */
extern const struct rec_decoder nccl_decoders[];
extern const struct report *const nccl_reports[];
extern const struct family_export nccl_export;	 /* nccl_export.c */
extern const struct family_sql nccl_sql;	 /* nccl_sql.c */
extern const struct ch_report ch_nccl_rank_sum;	 /* nccl_rank_sql.c */
extern const struct family family_nccl;		 /* nccl.c */
extern const struct family_sync nccl_sync;	 /* nccl_sync.c */
extern const struct report nccl_hang_report;	 /* nccl_hang_report.c */
extern const struct family_verdict nccl_verdict; /* nccl_hang_report.c: the hang rule */

/* Names of nccl.h's enums; NULL for a value nccl.h does not define. */
const char *nccl__result_name(int ret);	 /* ncclResult_t: "ncclInvalidArgument" */
const char *nccl__datatype_name(int dt); /* ncclDataType_t: "ncclFloat32" */
int nccl__datatype_size(int dt);	 /* bytes per element, 0 when unknown */
/* ncclRedOp_t: "ncclSum"; NULL for a user-defined op (ncclRedOpCreatePreMulSum, >= 5). */
const char *nccl__op_name(int op);
/* 64-bit FNV-1a of a ncclUniqueId's 128 bytes: equal on every rank of one communicator. */
__u64 nccl__id_hash(const void *id);

/*
 * What a reader learns from the calls it has seen, in file order: which communicator a
 * pointer is (rank, nranks and unique-id hash, from the call that created it, or from
 * ncclCommUserRank / ncclCommCount), and how deep each thread is in ncclGroupStart/End.
 * Feed it every record before decoding that record; the decoder then adds to a call what
 * the walk knew at that point (nccl__decode).
 */
struct nccl_walk;

/* One communicator as the walk knows it. A pointer reused after a destroy is a new one. */
struct nccl_comm {
	__u64 comm;
	__u64 id_hash; /* valid when have_hash */
	__u32 pid;
	__u32 serial; /* 1, 2, ... in order of first sight in the walk */
	__s32 rank;   /* -1 = unknown */
	__s32 nranks; /* -1 = unknown */
	__u64 parent; /* the communicator it was split or shrunk from, 0 = none */
	__u32 have_hash;
	/*
	 * Its creation was not seen with a unique id: GROUP is "the process's k-th such
	 * communicator" and its collectives count from its first one seen (or a merged file's
	 * SYNC_BASE), so they match other processes' only as well as those guesses do.
	 */
	__u32 inferred;
	/*
	 * A gloo process group (NCCL_F_GLOO): GROUP is "the process's k-th process group that made
	 * a call" (each rank creates its groups in one order; the default one is used first), its
	 * rank and size its own members, its collectives numbered by their gloo tags.
	 */
	__u32 gloo;
	__u32 _pad;
	__u64 group; /* what names it in every process: the unique-id hash, or the guess above */
	__u64 ncoll; /* its collectives so far (the next one's sequence number) */
};

/* The family's walk hooks (struct family.walk_*), over a struct nccl_walk. */
void *nccl_walk__new(void);
void nccl_walk__free(void *w);
/* Every record in file order (others than BS_REC_NCCL_CALL are ignored). */
void nccl_walk__observe(void *w, const struct bs_hdr *rec);
/* What the walk knows of communicator COMM of process PID now; NULL when never seen. */
const struct nccl_comm *nccl_walk__comm(const struct nccl_walk *w, __u32 pid, __u64 comm);
/* -ENOMEM when an allocation failed during the walk (some joins are then missing). */
int nccl_walk__err(const struct nccl_walk *w);
/* Process PID exited: what the walk knew of it goes (a recording's walk, which runs for days). */
void nccl_walk__forget(struct nccl_walk *w, __u32 pid);

/*
 * Decode an nccl call record into EV (event__init'ed). W: the walk that has just observed
 * REC, or NULL (no communicator join, no group depth). Returns 1.
 */
int nccl__decode(const struct bs_hdr *rec, const struct trace_model *m, const struct nccl_walk *w,
		 struct event *ev);

extern const struct metrics_family nccl_metrics; /* nccl_metrics.c */

struct family_ledger;
extern const struct family_ledger nccl_ledger; /* nccl_ledger.c: the ledger's feed */
#endif					       /* BPFSIGHT_NCCL_H */
