/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The launch join of the cupti-shim channel: which CPU call put each GPU record's work on
 * the GPU. CUPTI gives every kernel, copy and memset the correlation id of the API call that
 * launched it, and an API record (GPU_API: thread, start, duration) for that id. The join
 * finds, for each API record, the outermost launching cuda-family call (BS_REC_CUDA_CALL, any
 * depth) on the same thread whose interval contains the API record's start, and fills the GPU
 * records of that correlation id with the thread and the call's entry time
 * (BS_GPU_CALL_CUDA), or the API record's own start when no call matched (BS_GPU_CALL_API,
 * with a reason, JOIN_WHY_*).
 *
 * A process that sends GPU records but no API records (GPU timing switched on in a running
 * job, where API records cost on every call: docs/GPU.md) gets its links from launch order
 * (order_link.h) instead; where both exist, the two are compared (order_agree/differ).
 *
 * The same join runs while recording (shim_unpack.c) and when a file is read
 * (shim_relink.h), so files written before it gain the links. Records come late: CUPTI's
 * API records up to the shim's flush and send periods after their call, GPU records after
 * their API record or before it. So calls are kept by time (JOIN_KEEP_NS after they end), an
 * API record whose call may still come waits up to JOIN_WAIT_NS, and so do GPU records
 * waiting for their API record. Memory is capped, and what a cap drops is counted:
 *   - calls: JOIN_MAX_CALLS in all (16 bytes each); past it a thread forgets its oldest
 *     (counted in calls_dropped; ops whose call was forgotten count as calls_expired);
 *   - correlation table: JOIN_CORR_SLOTS ids per process (direct-mapped on the id, which
 *     CUPTI hands out in increasing order);
 *   - waiting API records: JOIN_HELD, waiting GPU records: JOIN_PENDING; when full the oldest
 *     is decided early, as it stands then.
 */
#ifndef BPFSIGHT_SHIM_JOIN_H
#define BPFSIGHT_SHIM_JOIN_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "gpu_records.h"

#define JOIN_KEEP_NS	10000000000ull
#define JOIN_WAIT_NS	4000000000ull
#define JOIN_MAX_CALLS	(1u << 21)
#define JOIN_CORR_SLOTS (1u << 17)
#define JOIN_PENDING	(1u << 16)
#define JOIN_HELD	(1u << 16)

/* Why a GPU record is not linked to its cuda call (shown by info and the recorder). */
enum join_why {
	JOIN_WHY_NO_API,   /* CUPTI's API record for its correlation id never came */
	JOIN_WHY_NO_CUDA,  /* no cuda call of the process recorded (-t cuda off, not probed) */
	JOIN_WHY_THREAD,   /* the process's calls recorded, none of the launching thread */
	JOIN_WHY_OUTSIDE,  /* the thread's calls recorded, none contains the API record */
	JOIN_WHY_NOT_SEEN, /* no containing call came within JOIN_WAIT_NS (lost, or running) */
	JOIN_WHY_EXPIRED,  /* the calls around it were forgotten (older than kept, or cap) */
	JOIN_WHY_NO_ORDER, /* no API records: no recorded call of its stream fits it in order */
	JOIN_WHY_GRAPH,	   /* no API records: a CUDA graph's node, not linked by launch order */
	JOIN_WHY_MAX,
};
/* "no_api_record"... for JOIN_WHY_*; "?" for others. */
const char *join_why__name(unsigned int why);

struct shim_join;

/* EMIT writes a finished record (GPU_API or GPU, linked or not) into the trace. */
struct shim_join *shim_join__new(void (*emit)(void *arg, struct bs_hdr *rec), void *arg);
void shim_join__free(struct shim_join *j); /* waiting records are dropped: expire first */

/*
 * Launch order for every process, to compare with the links of API records too (readers: info
 * shows it); by default only processes that sent no API records (the recorder's cost).
 */
void shim_join__order_always(struct shim_join *j);
/* No cuda call will come (the cuda family is not recorded): API records do not wait. */
void shim_join__no_calls(struct shim_join *j);
/* A cuda-family record (anything else is ignored), in the order they returned. */
void shim_join__cuda_call(struct shim_join *j, const struct bs_hdr *rec);
/*
 * A GPU_API record (pid set, strings translated): its call_ts and flags are filled and it is
 * emitted, now or when its call came (or it waited JOIN_WAIT_NS); then the GPU records
 * waiting for it. One already linked (BS_GPU_CALL_CUDA, from a file) keeps its link.
 */
void shim_join__api(struct shim_join *j, struct bs_gpu_api *r, __u64 now);
/*
 * A GPU_KERNEL, GPU_MEMCPY or GPU_MEMSET record (pid set, strings translated): emitted now,
 * linked, when its API record was decided; else held until it is (or expires). One already
 * linked to its call (from a file) is emitted as it is.
 */
void shim_join__gpu(struct shim_join *j, struct bs_hdr *rec, __u64 now);
/* Retry waiting API records; emit what waited JOIN_WAIT_NS (everything when ALL). */
void shim_join__expire(struct shim_join *j, __u64 now, int all);
/*
 * Process PID exited (its last batch came): its waiting records are decided and emitted now,
 * then everything of it is forgotten (call history, correlation ids).
 */
void shim_join__proc_exit(struct shim_join *j, __u32 pid);
/* Counters for the end-of-recording summary and info. */
struct shim_join_stats {
	__u64 linked_cuda, linked_api, unlinked;
	__u64 linked_order;	 /* of linked_cuda: by launch order alone (order_link.h) */
	__u64 order_agree;	 /* ops linked both ways: launch order named CUPTI's call */
	__u64 order_differ;	 /* ... and another call */
	__u64 order_linked;	 /* ops launch order matched to a call (whatever linked them) */
	__u64 order_unlinked;	 /* ... and found without one */
	__u64 order_dropped;	 /* calls and ops launch order had no room for (bounds) */
	__u64 why[JOIN_WHY_MAX]; /* GPU records not linked to a call (api-only + unlinked) */
	__u64 calls_dropped;	 /* calls forgotten early by JOIN_MAX_CALLS */
};
void shim_join__stats(const struct shim_join *j, struct shim_join_stats *s);
/* "outside_calls: 3, no_api_record: 1" (non-zero reasons) into BUF; 0 when there is none. */
int shim_join_stats__why(const struct shim_join_stats *s, char *buf, size_t len);

#endif /* BPFSIGHT_SHIM_JOIN_H */
