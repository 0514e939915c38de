/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The column encoder's inside (trace_columns_enc.c), shared with its planner
 * (trace_columns_plan.c), which chooses how a record type is coded in a chunk from the type's
 * first records there.
 */
#ifndef BPFSIGHT_TRACE_COLUMNS_PLAN_H
#define BPFSIGHT_TRACE_COLUMNS_PLAN_H

#include <endian.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>
#include "trace_columns.h"
#include "trace_columns_thread.h"

#define PLAN_SAMPLE 1024 /* records of a type whose costs choose its coding, per chunk */
/* Samples whose bytes are counted to weigh the codings, at most: every 2nd, 3rd... of them
 * (the deltas and slots still follow every one). */
#define PLAN_COUNTED 128

struct col_buf {
	__u8 *p;
	size_t len, cap;
};

/* The coding chosen for a type, as the directory says it. */
struct col_plan {
	__u32 flags;	  /* TRACE_COLUMNS_END, _THREAD, _GAP */
	__u32 rawmask;	  /* bit j: column j holds the values, not their deltas */
	__u32 threadmask; /* bit j: column j holds deltas against the same thread's record */
	__u32 gapword;	  /* with TRACE_COLUMNS_GAP: the u64 word predicted by the gap */
	__u32 key;	  /* with THREAD or GAP: the field whose value picks the slot (3: tid) */
	__u32 ncols;
};

/* One record type in this chunk, allocated the first time the type is seen. */
struct col_type {
	struct col_buf samples;			   /* its first records, until planned */
	struct col_buf col[TRACE_COLUMNS_MAX + 1]; /* its columns, then its tail */
	__u32 nrec, nsamples;
	int planned;
	struct col_plan plan;
	__u32 min_size, max_size;	   /* of the samples */
	__u32 enc_prev[TRACE_COLUMNS_MAX]; /* the fields last written to each column */
	struct col_threads *threads;	   /* TRACE_COLUMNS_SLOTS, once a plan wanted them */
	/*
	 * In the chunk's chain (TRACE_COLUMNS_CHAIN, with END): known when the record is
	 * added, so it is decided at the chunk's start, by the type's previous plan. Each
	 * sample keeps the chain as it was before it (chain_prev, a u64 each).
	 */
	int chain;
	struct col_buf chain_prev;
	/* Each column's varints by length (1 to 5 bytes); finish(): the columns stored in
	 * planes, and their planes' lengths. */
	__u32 nlen[TRACE_COLUMNS_MAX][TRACE_COLUMNS_NPLANES];
	__u32 planemask;
	__u32 plane_len[TRACE_COLUMNS_MAX][TRACE_COLUMNS_NPLANES];
};

/* Byte counts of each column's varints under each coding, while planning. */
enum { MODE_DELTA, MODE_RAW, MODE_THREAD, MODES };
typedef __u16 plan_hist[TRACE_COLUMNS_MAX][MODES][256]; /* <= PLAN_COUNTED x 5 bytes a bin */

static inline __u64 col_get64(const __u8 *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline __u32 col_field(const __u8 *r, __u32 j)
{
	__u32 v;

	memcpy(&v, r + 4 * j, sizeof(v));
	return le32toh(v);
}

/* The slot of record R (N fields in columns) under plan PL, or NULL: no key field in them. */
static inline struct col_thread *col_slot_of(const struct col_plan *pl, struct col_threads *tab,
					     const __u8 *r, __u32 n)
{
	return pl->key < n ? col_thread_of(tab, col_field(r, pl->key)) : NULL;
}

/*
 * The fields of record R (SIZE bytes, N <= TRACE_COLUMNS_MAX of them coded) as plan PL codes
 * them into V: with END, fields 4, 5 hold the end; with GAP, the gap word holds its value
 * less the time since the end of the previous record of its slot S (NULL: none). Inline:
 * the encoder's path per record.
 */
static inline void col_load_fields(const struct col_plan *pl, const struct col_thread *s,
				   const __u8 *r, __u32 n, __u32 size, __u32 *v)
{
	__u32 j, w = pl->gapword;

	for (j = 0; j < n; j++)
		v[j] = col_field(r, j);
	if ((pl->flags & TRACE_COLUMNS_END) && size >= 32) {
		__u64 end = col_get64(r + 16) + col_get64(r + 24);

		v[4] = (__u32)end;
		v[5] = (__u32)(end >> 32);
	}
	if ((pl->flags & TRACE_COLUMNS_GAP) && size >= 8 * (w + 1)) {
		__u64 x = col_get64(r + 8 * w) - col_thread_gap(s, col_get64(r + 16));

		v[2 * w] = (__u32)x;
		v[2 * w + 1] = (__u32)(x >> 32);
	}
}

/*
 * Choose T's coding from its samples into T->plan, using HIST as scratch; the per-slot
 * codings are weighed with TAB (T's table; NULL: not weighed), which is left empty. The
 * choice only weighs bytes: any plan decodes.
 */
void col_plan_type(struct col_type *t, plan_hist *hist, struct col_threads *tab);

/*
 * The lengths of the planes of a column whose varints have NLEN[k] of k + 1 bytes into
 * PLANE_LEN; returns whether it should be stored in planes: when its varints take 1.5 bytes
 * or more on average.
 */
int col_planes_measure(const __u32 *nlen, __u32 *plane_len);
/* Write column SRC[0..LEN) at DST as its planes of lengths PLANE_LEN, back to back. */
void col_planes_scatter(const __u8 *src, size_t len, __u8 *dst, const __u32 *plane_len);

#endif /* BPFSIGHT_TRACE_COLUMNS_PLAN_H */
