/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What metrics.c keeps and metrics_render.c writes out; families see metrics_family.h. */
#ifndef BPFSIGHT_METRICS_STATE_H
#define BPFSIGHT_METRICS_STATE_H

#include <pthread.h>
#include "family.h"
#include "metrics_family.h"
#include "metrics_ident.h"

/* The counters of one series owner: each family's, made when it first counts there. */
struct metrics_series {
	void *fam[FAMILY_MAX];
};

struct metrics_proc {
	__u32 pid;
	__u32 owned;  /* its events go to its own series (else to "other"); kept while in grace */
	__u32 nforks; /* children it forked (without exec): its workers, numbered from 0 */
	__u32 forked; /* forked, no exec since: its role is its parent's worker N */
	char comm[BS_COMM_LEN];
	struct metrics_ident id; /* job and role labels; empty when not known */
	__u64 dead_at;		 /* exit time (CLOCK_MONOTONIC ns), 0 while alive */
	__u64 born;		 /* its fork's time, 0: running when the monitor started */
	__u64 activity;		 /* events since the last rebalance */
	__u32 idle;		 /* whole rebalance windows since its last event */
	__u64 asked;		 /* the window it last asked for an idle owner's slot */
	struct metrics_series s; /* kept while it does not own series, continued if it does again */
};

struct metrics {
	struct metrics_opts o;
	pthread_mutex_t lock; /* the recorder's thread writes, the server's reads */
	struct hmap *procs;   /* {pid, 0} -> metrics_proc */
	__u32 nowned;	      /* live processes owning series: at most top_n */
	__u32 ndead_owned;    /* exited ones whose series stay for the grace: at most top_n */
	struct metrics_series other;
	void *states[FAMILY_MAX];    /* the families' node-wide states (metrics_family.open) */
	__u64 lost[BS_LOST_KEYS];    /* by family and cause (BS_LOST_KEY, loss__key) */
	__u64 lost_all[BS_LOSS_MAX]; /* the whole recording's (or not said): family "all" */
	__u64 records;
	__u64 last_rebalance, now;
	__u64 grace_end; /* when the first exited process's grace ends; 0: none exited */
};

/* With the lock held: exited processes' series go after the grace period, owners change. */
void metrics__housekeep(struct metrics *m, __u64 now);

#endif /* BPFSIGHT_METRICS_STATE_H */
