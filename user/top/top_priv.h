/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What top_state.c keeps and top_cut.c cuts into frames; families see top_family.h. */
#ifndef BPFSIGHT_TOP_PRIV_H
#define BPFSIGHT_TOP_PRIV_H

#include <pthread.h>
#include "family.h"
#include "hmap.h"
#include "top.h"
#include "top_family.h"

/* A polled column with no new snapshot for this long has nothing to count: it reads 0. */
#define TOP_POLL_STALE_NS 2500000000ull
#define TOP_LOSS_KINDS	  4 /* causes named in one interval's loss line */

struct top_cell {
	__u64 v;
	const char *label; /* TOP_LONGEST */
};

/* A thread, or (tid 0) a process: its own values and what the process row needs. */
struct top_thread {
	__u32 pid, tid;
	__u32 flags; /* TOP_ROW_TARGET, TOP_ROW_EXITED */
	__u32 cpu_known;
	__u64 cpu_ns;	/* its on-CPU time at the last cut (or when first seen) */
	__u64 delay_ns; /* and its time ready to run without a CPU then */
	struct top_cell cell[TOP_MAX_COLS]; /* the interval under way */
	double polled[TOP_MAX_COLS];	    /* TOP_POLLED columns: the value of the last polls */
	/* NOW (top_now.c): what it was in at the last read, for how long, when read */
	const char *now_label;
	__u64 now_ns, now_at;
	__u64 exit_cpu_ns; /* its whole CPU time, from its EXIT record (0: not known) */
	__u32 exit_seen;   /* its EXIT record came */
	__u32 vanished;	   /* cuts that found it gone from /proc before its EXIT record came */
	__s32 rank;	   /* a process's rank in its environment (top_role.c), -1: none */
};

struct top_loss_kind {
	const char *family, *cause;
	__u64 n;
};

struct top {
	pthread_mutex_t lock; /* the recording's thread folds, the screen's cuts */
	const struct record_opts *o;
	struct trace_model *model; /* names: every record goes through it */
	struct hmap *threads;	   /* {pid, tid} -> top_thread; {pid, 0} the process */
	struct top_col cols[TOP_MAX_COLS];
	__u32 ncols;
	int col_base[FAMILY_MAX]; /* a family's first column, -1 without columns */
	int hooked[FAMILY_MAX];	  /* a recorded family with top hooks, columns or not */
	void *states[FAMILY_MAX];
	__u32 shown;
	__u64 live_since, last_cut;
	__u64 records, records_cut;
	__u64 lost, lost_cut;
	struct top_loss_kind lost_kinds[TOP_LOSS_KINDS];
	__u64 poll_ts[FAMILY_MAX], poll_cut[FAMILY_MAX]; /* TOP_POLLED columns' clock */
	__u64 replay_start; /* a replay's first interval's start (0: its first record's time) */
	__u64 poll_start;   /* a replay's: when the first polls' counts began (0: its start) */
	__u64 now_ts;	    /* the time of the record being folded: a poll's time for TOP_POLLED */
	int replay;	    /* records of a file: nothing is read from /proc (no CPU%) */
	int now_col;	    /* NOW's column (top -p), -1 without it */
	int rank_col, role_col; /* RANK's and ROLE's (top_role.c) */
	char **labels;		/* NOW's labels, each once (top_now.c) */
	size_t nlabels, labels_cap;
	struct top_funcs *funcs;		 /* the function view's counts (top_funcs.h) */
	int want_funcs;				 /* its rows are cut into the frames */
	const struct top_ledger_ops *ledger_ops; /* the ledger view's (NULL: none) */
	void *ledger;				 /* the interval's, while wanted */
};

/* The entry of thread TID of PID (0: the process), made on first use; NULL without memory. */
struct top_thread *top__thread(struct top *t, __u32 pid, __u32 tid);
/* NOW (top_now.c): a BS_SNAP_NOW THREAD_SNAP read; a row's value and label at cut NOW. */
void top_now__snap(struct top *t, const struct bs_hdr *h);
void top_now__cell(const struct top *t, const struct top_thread *th, __u64 now, double *val,
		   const char **label);
void top_now__free(struct top *t);
/* LABEL as a string that lives as long as top (rows keep pointers to it); NULL past a cap. */
const char *top__intern(struct top *t, const char *label);
/* RANK and ROLE (top_role.c): a process's rank as it is first seen (live: its environment). */
void top_role__born(struct top *t, struct top_thread *th);
/* A PROC_SNAP: the rank its environment says. */
void top_role__snap(struct top *t, const struct bs_hdr *h);
/* Process TH's cells of a row of FR: its rank, its role. */
void top_role__cells(struct top *t, const struct top_thread *th, struct top_row *r);
/* Its on-CPU time from /proc (top_cpu.c), and (DELAY not NULL) its time ready to run without a
 * CPU: 0, or -errno when it is gone. */
int top_cpu__read(__u32 pid, __u32 tid, __u64 *ns, __u64 *delay);

#endif /* BPFSIGHT_TOP_PRIV_H */
