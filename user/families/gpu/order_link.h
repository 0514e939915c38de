/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Launch order links: which recorded cuda call put each GPU op on the GPU, from the file's own
 * records alone, without CUPTI's per-call API records (costly to switch on in a running job:
 * docs/GPU.md). A stream runs its work in the order it was queued, so the n-th kernel, copy
 * or memset CUPTI reports on a stream is the n-th launch, copy or memset the process queued on
 * the stream handle it maps to. Each op is matched to a call by its shape (grid, block and
 * dynamic shared memory; bytes for copies and memsets) and by time (the call began before the
 * op did), over a window of following ops, so that a lost op, a lost call or an op whose call
 * was not probed shifts nothing:
 *   - a stream is aligned to a handle at its first ops: the handle and call from which the
 *     most ops in a row (at least ORDER_WINDOW, at most ORDER_RUN_MAX) fit their calls in a
 *     row; of equal runs the latest call (the GPU behind the host by the least). A run
 *     shifted by a repetition of shapes fits in time as well while the GPU is behind, but
 *     breaks where the queue drained (a synchronization), so the longest run is the true
 *     one; while two runs reach the last op there is, the stream waits for more ops (at most
 *     ORDER_HOLD_NS after they came). The ops before it were queued before calls were
 *     recorded;
 *   - then each op takes the next call; when it does not fit, the stream is aligned again
 *     from that op, the same way (ops were lost, or the calls in between queued nothing);
 *     failing that, the op's call was not recorded.
 * Graph nodes (one launch, many ops) and ops without a start are not linked by order.
 *
 * Ops are matched ORDER_SETTLE_NS after they arrive (their stream's later ops are there to
 * look ahead), calls are kept ORDER_KEEP_NS, ORDER_MAX_CALLS in all; what a bound drops is
 * counted.
 */
#ifndef BPFSIGHT_ORDER_LINK_H
#define BPFSIGHT_ORDER_LINK_H

#include <linux/types.h>
#include "records.h"

#define ORDER_WINDOW	16
#define ORDER_RUN_MAX	4096
#define ORDER_SETTLE_NS 500000000ull
#define ORDER_HOLD_NS	2000000000ull
#define ORDER_KEEP_NS	10000000000ull
#define ORDER_MAX_CALLS (1u << 21)
#define ORDER_MAX_OPS	(1u << 20) /* waiting ops, all streams */

struct order_link;

/* Called for each op matched: TID and CALL_TS of its call, or TID 0 when it has none. */
typedef void (*order_link_fn)(void *arg, __u32 pid, __u32 corr, __u32 tid, __u64 call_ts);

struct order_link *order_link__new(order_link_fn fn, void *arg);
void order_link__free(struct order_link *ol);

/* A cuda-family record; kept when it is an outermost launch, copy or memset. */
void order_link__call(struct order_link *ol, const struct bs_hdr *rec);
/* A GPU_KERNEL, GPU_MEMCPY or GPU_MEMSET record as it arrives (others are ignored). */
void order_link__op(struct order_link *ol, const struct bs_hdr *rec, __u64 now);
/* Match the ops that arrived ORDER_SETTLE_NS before NOW (every op when ALL). */
void order_link__run(struct order_link *ol, __u64 now, int all);
/* PID exited: its ops are matched now, then it is forgotten. */
void order_link__proc_exit(struct order_link *ol, __u32 pid);

struct order_link_stats {
	__u64 linked, unlinked; /* ops matched to a call, and found to have none */
	__u64 realigned;	/* times a stream was aligned again after a miss */
	__u64 calls_dropped;	/* forgotten early by ORDER_MAX_CALLS */
	__u64 ops_dropped;	/* not matched: over ORDER_MAX_OPS waiting */
};
void order_link__stats(const struct order_link *ol, struct order_link_stats *s);

#endif /* BPFSIGHT_ORDER_LINK_H */
