/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What metrics.c keeps and metrics_render.c writes out; nothing else includes it. */
#ifndef BPFSIGHT_METRICS_STATE_H
#define BPFSIGHT_METRICS_STATE_H

#include <pthread.h>
#include "busy_union.h"
#include "metrics.h"
#include "stats_math.h"

#define M_MAX_BOUNDS 24 /* finite histogram bounds; one more bucket holds the rest (+Inf) */

/* Off-CPU time by what the thread was doing (sched's bs_offcpu). */
enum { M_OFF_SLEEPING, M_OFF_DISK, M_OFF_RUNNABLE, M_OFF_OTHER, M_OFF_NR };

/* Which API table a call histogram belongs to (the key's a). */
enum { M_UCALL_CUDA, M_UCALL_NCCL, M_UCALL_NR };

struct m_count {
	__u64 count, total_ns;
};

/* A GPU device's kernels: how many, their summed time, and the time any of them ran. */
struct m_gpu {
	__u64 count, total_ns;
	struct busy_union busy;
};

/* Calls per bucket (not cumulative: the renderer sums), bucket i = (bound[i-1], bound[i]]. */
struct m_hist {
	__u64 bucket[M_MAX_BOUNDS + 1];
	__u64 count, sum_ns;
};

/* The counters of one series owner: a process with series of its own, or all the others. */
struct m_series {
	__u64 gil_wait_ns, gil_waits;
	__u64 offcpu_ns[M_OFF_NR];
	struct hmap *syscalls; /* {nr, 0} -> m_count */
	struct hmap *ucalls;   /* {M_UCALL_*, fn} -> m_hist */
};

struct m_proc {
	__u32 pid;
	__u32 owned;  /* its events go to its own series (else to "other") */
	__u32 python; /* the gil family measures its GIL: its GIL series show from 0 */
	char comm[BS_COMM_LEN];
	__u64 dead_at;	   /* exit time (CLOCK_MONOTONIC ns), 0 while alive */
	__u64 activity;	   /* events since the last rebalance */
	struct m_series s; /* kept while it does not own series, continued if it does again */
};

struct m_bounds {
	__u64 ns[M_MAX_BOUNDS];
	__u32 n;
};

struct metrics {
	struct metrics_opts o;
	pthread_mutex_t lock; /* the recorder's thread writes, the server's reads */
	struct hmap *procs;   /* {pid, 0} -> m_proc */
	__u32 nowned;
	struct m_series other;
	struct hmap *sys_last; /* {pid << 32 | tid, nr} -> m_count: the last in-kernel total */
	struct hmap *gil_last; /* {pid << 32 | tid, 0} -> m_count: the last in-kernel total */
	struct hmap *sys_hist; /* {nr, 0} -> m_hist */
	struct hmap *gpu;      /* {device, 0} -> m_gpu: kernels, their time, busy time */
	struct m_bounds sys_bounds, call_bounds;
	__u64 lost[BS_LOSS_NR];
	__u64 records;
	__u64 last_rebalance, now;
};

/* With the lock held: exited processes' series go after the grace period, owners change. */
void metrics__housekeep(struct metrics *m, __u64 now);

#endif /* BPFSIGHT_METRICS_STATE_H */
