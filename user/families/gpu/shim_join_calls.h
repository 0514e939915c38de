/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One thread's recent launching cuda calls, kept by time for the launch join (shim_join.h):
 * which recorded call contains the start of a CUPTI API record. Calls arrive as they return,
 * so in end order (an outer call after the calls nested in it); the history is a ring sorted
 * by end, trimmed by time, never by count alone.
 */
#ifndef BPFSIGHT_SHIM_JOIN_CALLS_H
#define BPFSIGHT_SHIM_JOIN_CALLS_H

#include <linux/types.h>

struct jcall {
	__u64 ts;
	__u32 dur;   /* saturated at 2^32-1 ns: only the start matters past that */
	__u16 depth; /* cuda calls enclosing it on the thread */
	__u16 _pad;
};

struct jthread {
	struct jcall *c; /* ring of cap (a power of 2) calls, sorted by end from head */
	__u32 cap, head, n;
	__u32 nheld;	/* API records of this thread waiting for a call (shim_join.c) */
	__u64 settled;	/* the latest end of a depth-0 cuda call (any): containers before it came */
	__u64 appended; /* calls ever added: a held API record retries only when it moved */
	__u64 forgot_end; /* calls forgotten (by time or the cap) ended at or before this */
};

/* Add a call, keeping the ring sorted by end. 0, or -ENOMEM (the call is not kept). */
int jthread__add(struct jthread *t, __u64 ts, __u64 dur, __u16 depth);
/* Forget the oldest call; 1 when there was one. */
int jthread__pop(struct jthread *t);
/* Forget the calls that ended before BEFORE; returns how many. */
__u32 jthread__trim(struct jthread *t, __u64 before);
/*
 * The start of the outermost call overlapping [T0, T1], at any depth; 0 when none does.
 * CUPTI's API record lies inside its call, so this is the outermost call containing T0.
 */
__u64 jthread__find(const struct jthread *t, __u64 t0, __u64 t1);
void jthread__free(struct jthread *t);

#endif /* BPFSIGHT_SHIM_JOIN_CALLS_H */
