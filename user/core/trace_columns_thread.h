/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-thread state of the column codec (trace_columns.h, format version 3), the same on
 * both sides: for a record type coded with TRACE_COLUMNS_THREAD or TRACE_COLUMNS_GAP, what
 * the previous record of the same thread held. A fixed table of TRACE_COLUMNS_SLOTS slots,
 * slot = tid % TRACE_COLUMNS_SLOTS, each remembering one thread: a record whose slot holds
 * another thread (or none) sees zeros and no end, then takes the slot over. The table is
 * bounded however many threads a chunk holds, and it is emptied at every chunk, so a chunk
 * still decodes on its own.
 *
 * Why per thread: a thread's records follow each other on one timeline. A field that
 * changes with the thread and rarely within it (its CPU) costs nothing coded against the
 * same thread's previous record, and sched's oncpu_ns is exactly the time since the end of
 * the thread's previous off-CPU interval.
 */
#ifndef BPFSIGHT_TRACE_COLUMNS_THREAD_H
#define BPFSIGHT_TRACE_COLUMNS_THREAD_H

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "trace_columns.h"

#define TRACE_COLUMNS_SLOTS 256

struct col_thread {
	__u32 tid;     /* or the key field's value: the slot's thread */
	__u32 gen;     /* the slot holds tid when gen is its table's */
	__u32 has_end; /* end is the end of its previous record of 32 bytes or more */
	__u64 end;
	__u32 prev[TRACE_COLUMNS_MAX]; /* its previous record's fields as coded */
};

/*
 * The table: emptying it (every chunk) moves on its generation rather than touching its
 * slots, so a chunk only ever touches the slots its threads use.
 */
struct col_threads {
	__u32 gen;
	struct col_thread slot[TRACE_COLUMNS_SLOTS];
};

/* An empty table, or NULL (no memory). */
static inline struct col_threads *col_threads_new(void)
{
	struct col_threads *tab = calloc(1, sizeof(*tab));

	if (tab)
		tab->gen = 1;
	return tab;
}

static inline void col_threads_clear(struct col_threads *tab)
{
	if (++tab->gen)
		return;
	memset(tab->slot, 0, sizeof(tab->slot)); /* the generation wrapped */
	tab->gen = 1;
}

/* TID's slot, taken over (zeroed) when it held another thread or none. */
static inline struct col_thread *col_thread_of(struct col_threads *tab, __u32 tid)
{
	struct col_thread *s = &tab->slot[tid % TRACE_COLUMNS_SLOTS];

	if (s->gen != tab->gen || s->tid != tid) {
		memset(s, 0, sizeof(*s));
		s->tid = tid;
		s->gen = tab->gen;
	}
	return s;
}

/*
 * The prediction of the gap word: the time since the end of the thread's previous record
 * (modulo 2^64), or 0 when the slot has no end or the record no slot (S NULL).
 */
static inline __u64 col_thread_gap(const struct col_thread *s, __u64 ts)
{
	return s && s->has_end ? ts - s->end : 0;
}

/*
 * After a record of N coded fields V (N <= TRACE_COLUMNS_MAX) and SIZE bytes at R: the
 * slot remembers them, and its end when the record has the u64 at byte 24.
 */
static inline void col_thread_note(struct col_thread *s, const __u32 *v, __u32 n, const __u8 *r,
				   __u32 size)
{
	__u64 ts, dur;

	memcpy(s->prev, v, (size_t)n * 4);
	if (size >= 32) {
		memcpy(&ts, r + 16, 8);
		memcpy(&dur, r + 24, 8);
		s->end = le64toh(ts) + le64toh(dur);
		s->has_end = 1;
	}
}

#endif /* BPFSIGHT_TRACE_COLUMNS_THREAD_H */
