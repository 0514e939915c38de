/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The launch join of the cupti-shim channel: which CPU call put each GPU record's work on
 * the GPU. CUPTI gives every kernel, copy and memset the correlation id of the API call that
 * launched it, and an API record (GPU_API: thread, start, duration) for that id. The join
 * finds, for each API record, the cuda-family event (a depth-0 BS_REC_CUDA_CALL that
 * launches work) on the same thread whose interval contains it, and fills the GPU records of
 * that correlation id with the thread and the call's entry time (BS_GPU_CALL_CUDA), or the
 * API record's own start when no cuda event matched (BS_GPU_CALL_API).
 *
 * Bounds (all memory is fixed or capped):
 *   - cuda call history: the last JOIN_HIST launching calls per thread, for at most
 *     JOIN_MAX_THREADS threads (32 KiB each; threads past the cap link through the API
 *     record only);
 *   - correlation table: JOIN_CORR_SLOTS ids per process (direct-mapped on the id, which
 *     CUPTI hands out in increasing order: 3 MiB per process that sends GPU records);
 *   - pending GPU records (arrived before their API record): JOIN_PENDING records, each
 *     written unlinked after JOIN_PENDING_NS or when the queue is full.
 */
#ifndef BPFSIGHT_SHIM_JOIN_H
#define BPFSIGHT_SHIM_JOIN_H

#include <linux/types.h>
#include "records.h"
#include "shim_records.h"

#define JOIN_HIST	 2048
#define JOIN_MAX_THREADS 2048
#define JOIN_CORR_SLOTS	 (1u << 17)
#define JOIN_PENDING	 8192
#define JOIN_PENDING_NS	 2000000000ull

struct shim_join;

/* EMIT writes a finished GPU record (linked or not) into the trace. */
struct shim_join *shim_join__new(void (*emit)(void *arg, struct bs_hdr *rec), void *arg);
void shim_join__free(struct shim_join *j); /* pending records are dropped: expire first */

/* A cuda-family record from the ring (anything else is ignored). */
void shim_join__cuda_call(struct shim_join *j, const struct bs_hdr *rec);
/*
 * A GPU_API record about to be written (pid already set): fills its call_ts and flags,
 * remembers its correlation id, then emits the pending GPU records waiting for it.
 */
void shim_join__api(struct shim_join *j, struct bs_gpu_api *r);
/*
 * A GPU_KERNEL, GPU_MEMCPY or GPU_MEMSET record (pid set, strings translated): emitted now,
 * linked, when its API record was seen; else held until it comes (or expires).
 */
void shim_join__gpu(struct shim_join *j, struct bs_hdr *rec, __u64 now);
/* Emit, unlinked, what waited longer than JOIN_PENDING_NS (everything when ALL). */
void shim_join__expire(struct shim_join *j, __u64 now, int all);
/* Counters for the end-of-recording summary. */
struct shim_join_stats {
	__u64 linked_cuda, linked_api, unlinked;
};
void shim_join__stats(const struct shim_join *j, struct shim_join_stats *s);

#endif /* BPFSIGHT_SHIM_JOIN_H */
