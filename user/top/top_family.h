/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A family's columns in `bpfsight top` (struct family.top): it folds the records it knows into
 * counters per thread for the interval under way (top__add and friends), and says how each
 * column reads (a share of the time, a rate, the longest event); or it sets a process's level
 * (the bytes it holds), which stays until set again. top (user/top/) owns the
 * threads, the intervals, the CPU column, the screen; it records by default the families that
 * have columns. Every hook runs on the recording's thread, with top's lock held.
 */
#ifndef BPFSIGHT_TOP_FAMILY_H
#define BPFSIGHT_TOP_FAMILY_H

#include <linux/types.h>
#include "records.h"

struct family;
struct record_opts;
struct top;

enum top_kind {
	TOP_SHARE = 1, /* ns of the interval, as a percentage of it (a thread's at most 100) */
	TOP_RATE,      /* events, shown per second */
	TOP_LONGEST,   /* the longest event (ns) and its label ("futex 12ms"); a process: its max */
	TOP_LEVEL,     /* bytes a process holds now (top__set): kept from frame to frame */
	TOP_VALUE,     /* a number a process has now (watts: top__set), kept as a level is */
	TOP_TAG,       /* top's own: a short text of a process (its rank, its role), not summed */
};

/*
 * The values come in the cumulative snapshots a family writes every poll (gil's GIL_AGG):
 * divided by the time between the polls they came in, not by the screen's interval, so that
 * a poll landing on either side of a refresh does not make the column jump.
 */
#define TOP_POLLED 0x1

struct top_column {
	const char *key;  /* --sort KEY: "gil" */
	const char *head; /* its heading, at most WIDTH characters: "GIL%" */
	const char *desc; /* one line on the help screen and in docs/USAGE.md */
	__u8 kind;	  /* TOP_* */
	__u8 flags;	  /* TOP_POLLED */
	__u8 width;	  /* characters on screen (TOP_LONGEST: the least it is shown in) */
};

#define TOP_FAMILY_COLS 4 /* columns one family may have */

struct top_family {
	const struct top_column *columns; /* ends with a zeroed entry; NULL: none (samples only) */
	/* State of its own for a recording with options O (e.g. per-thread last totals). */
	int (*open)(const struct record_opts *o, void **st);
	void (*free)(void *st);
	/* One record of the stream (any family's, as a trace file would get it). */
	void (*record)(struct top *t, void *st, const struct bs_hdr *rec);
};

/*
 * What a hook adds to column COL (index in its columns) of family F, for thread TID of process
 * PID (TID 0: the process as a whole, e.g. a GPU kernel whose launching thread is unknown).
 * A column is shown once something was added to it, 0 included (columns that never got
 * anything stay hidden: a machine without a GPU has no GPU% column).
 */
void top__add(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid, __u64 v);
/* Show column COL of F from now on, before it has values (e.g. a python process was found). */
void top__show(struct top *t, const struct family *f, int col);
/* A TOP_SHARE event that ran from START for DUR: the part of it inside the interval. */
void top__add_span(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid,
		   __u64 start, __u64 dur);
/* A TOP_LONGEST event of DUR; LABEL must live as long as top (a static string). */
void top__longest(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid, __u64 dur,
		  const char *label);

/*
 * A sample of a thread's stack (stack id STACK_ID, 0: none read; taken in kernel code when
 * KERNEL) standing for PERIOD_NS of time on a CPU: the function view's (top.h).
 */
void top__sample(struct top *t, __u32 stack_id, int kernel, __u64 period_ns);

/*
 * A TOP_LEVEL (TOP_VALUE) column of process PID: V bytes (V) from now on, until set again or
 * PID exits (the process's row shows it; its threads' rows do not).
 */
void top__set(struct top *t, const struct family *f, int col, __u32 pid, __u64 v);

#endif /* BPFSIGHT_TOP_FAMILY_H */
