// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Column encoder (trace_columns.h). A type's first records in a chunk are kept whole while
 * what each coding choice would cost is counted; then its coding is chosen (per column: delta
 * or raw; the end in place of ts; how many columns), those records are split into columns,
 * and the type's later records go straight to its columns. Memory stays at about the chunk's
 * encoded size.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace_codec.h"
#include "trace_columns_plan.h"

struct trace_columns_enc {
	struct col_type *t[BS_REC_TYPE_MAX];
	struct col_buf types; /* each record's type, a u16 (the chunk has its index: finish) */
	__u16 index[BS_REC_TYPE_MAX]; /* finish(): a type's index in the directory */
	struct col_buf flat;	      /* finish(): the whole chunk */
	size_t bytes;		      /* in the columns and tails */
	size_t sampled;		      /* estimate for the records kept as samples: a byte a field */
	__u64 chain;		      /* fields 4, 5 as coded of the last record in the chain */
	__u32 nrec;
	plan_hist hist; /* the planner's scratch */
};

static int buf_reserve(struct col_buf *b, size_t more)
{
	size_t cap;
	__u8 *p;

	if (b->cap - b->len >= more)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void buf_put(struct col_buf *b, const void *p, size_t n)
{
	if (n) /* an empty buffer may have no memory yet */
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static __u32 zigzag32(__u32 d)
{
	return (d << 1) ^ (__u32)((__s32)d >> 31);
}

/* Fields 4, 5 of a record coded with END: ts, plus the u64 at byte 24 when there is one. */
static __u64 rec_ts_or_end(const __u8 *r, __u32 size)
{
	__u64 ts, dur = 0;

	memcpy(&ts, r + 16, 8);
	if (size >= 32)
		memcpy(&dur, r + 24, 8);
	return le64toh(ts) + le64toh(dur);
}

struct trace_columns_enc *trace_columns_enc__new(void)
{
	return calloc(1, sizeof(struct trace_columns_enc));
}

void trace_columns_enc__free(struct trace_columns_enc *e)
{
	int i, j;

	if (!e)
		return;
	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		for (j = 0; e->t[i] && j <= TRACE_COLUMNS_MAX; j++)
			free(e->t[i]->col[j].p);
		if (e->t[i]) {
			free(e->t[i]->samples.p);
			free(e->t[i]->threads);
			free(e->t[i]->chain_prev.p);
		}
		free(e->t[i]);
	}
	free(e->types.p);
	free(e->flat.p);
	free(e);
}

void trace_columns_enc__reset(struct trace_columns_enc *e)
{
	int i, j;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];
		struct col_buf keep[TRACE_COLUMNS_MAX + 3];
		struct col_threads *threads;
		int chain;

		if (!t || !t->nrec)
			continue;
		/* The buffers stay for the next chunk; the counts, plan and delta state go. */
		threads = t->threads;
		if (threads)
			col_threads_clear(threads);
		/* A type coded by its end joins the chain from the next chunk on. */
		chain = !!(t->plan.flags & TRACE_COLUMNS_END);
		keep[0] = t->samples;
		keep[1] = t->chain_prev;
		memcpy(keep + 2, t->col, sizeof(t->col));
		memset(t, 0, sizeof(*t));
		t->samples = keep[0];
		t->samples.len = 0;
		t->chain_prev = keep[1];
		t->chain_prev.len = 0;
		memcpy(t->col, keep + 2, sizeof(t->col));
		t->threads = threads;
		t->chain = chain;
		for (j = 0; j <= TRACE_COLUMNS_MAX; j++)
			t->col[j].len = 0;
	}
	/* The laid-out chunk has been compressed: its memory goes too (see finish). */
	free(e->flat.p);
	memset(&e->flat, 0, sizeof(e->flat));
	e->types.len = 0;
	e->bytes = e->sampled = 0;
	e->chain = 0;
	e->nrec = 0;
}

void trace_columns_enc__restart(struct trace_columns_enc *e)
{
	int i;

	trace_columns_enc__reset(e);
	for (i = 0; i < BS_REC_TYPE_MAX; i++)
		if (e->t[i])
			e->t[i]->chain = 0;
}

size_t trace_columns_enc__size(const struct trace_columns_enc *e)
{
	/* A record's index in the directory takes a byte (two past 128 types: a chunk's few). */
	return e->bytes + e->sampled + e->nrec;
}

__u32 trace_columns_enc__records(const struct trace_columns_enc *e)
{
	return e->nrec;
}

/*
 * Write record R to its type's columns and tail; CHAIN: fields 4, 5 as coded of the chain's
 * record before it. 0 or -ENOMEM (nothing written then).
 */
static int encode_record(struct trace_columns_enc *e, struct col_type *t, const __u8 *r, __u32 size,
			 __u64 chain)
{
	const struct col_plan *pl = &t->plan;
	__u32 nf = size / 4, n = nf < pl->ncols ? nf : pl->ncols, j, m;
	__u32 v[TRACE_COLUMNS_MAX], pred[TRACE_COLUMNS_MAX];
	size_t bytes = (size_t)(nf - n) * 4;
	struct col_thread *s = NULL;

	for (j = 0; j < n; j++)
		if (t->col[j].cap - t->col[j].len < TRACE_VARINT_MAX &&
		    buf_reserve(&t->col[j], TRACE_VARINT_MAX))
			return -ENOMEM;
	if (buf_reserve(&t->col[pl->ncols], (size_t)(nf - n) * 4))
		return -ENOMEM;
	if (pl->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP))
		s = col_slot_of(pl, t->threads, r, n);
	col_load_fields(pl, s, r, n, size, v);
	/* What each column's delta is taken against: the type's, the slot's or the chain's. */
	for (j = 0; j < n; j++) /* a loop: a small memcpy becomes a slow rep movs here */
		pred[j] = t->enc_prev[j];
	for (m = pl->threadmask; m; m &= m - 1) {
		j = (__u32)__builtin_ctz(m);
		pred[j] = s ? s->prev[j] : 0; /* a record out of the slots: against zeros */
	}
	if (pl->flags & TRACE_COLUMNS_CHAIN) {
		pred[4] = (__u32)chain;
		pred[5] = (__u32)(chain >> 32);
	}
	for (j = 0; j < n; j++) {
		struct col_buf *c = &t->col[j];
		__u32 x = pl->rawmask >> j & 1 ? v[j] : zigzag32(v[j] - pred[j]);
		size_t k = trace_varint_put(c->p + c->len, x);

		t->nlen[j][k - 1]++;
		c->len += k;
		bytes += k;
		t->enc_prev[j] = v[j];
	}
	if (s)
		col_thread_note(s, v, n, r, size);
	buf_put(&t->col[pl->ncols], r + 4 * n, (size_t)(nf - n) * 4);
	e->bytes += bytes;
	return 0;
}

/* Records of a type in a chunk, at least, for its plan to weigh coding it per thread. */
#define THREAD_MIN_SAMPLES 64

/*
 * Choose T's coding from its samples (trace_columns_plan.c), then split the samples into
 * columns. The thread table is allocated once for a type that has enough records; without
 * memory for it the type is coded without it.
 */
static int plan_type(struct trace_columns_enc *e, struct col_type *t)
{
	size_t off, i, bytes = e->bytes, sampled = e->sampled;
	__u32 j;
	int err;

	if (!t->threads && t->nsamples >= THREAD_MIN_SAMPLES)
		t->threads = col_threads_new();
	/* Whether the table is there from an earlier chunk does not change the plan. */
	col_plan_type(t, &e->hist, t->nsamples >= THREAD_MIN_SAMPLES ? t->threads : NULL);
	for (off = 0, i = 0; off < t->samples.len; i++) {
		const __u8 *r = t->samples.p + off;
		__u32 size = le32toh(*(const __u32 *)r) >> 16;
		__u64 chain;

		memcpy(&chain, t->chain_prev.p + 8 * i, 8);
		err = encode_record(e, t, r, size, chain);
		if (err) { /* as it was: all the records still in the samples */
			for (j = 0; j <= TRACE_COLUMNS_MAX; j++)
				t->col[j].len = 0;
			memset(t->enc_prev, 0, sizeof(t->enc_prev));
			memset(t->nlen, 0, sizeof(t->nlen));
			if (t->threads)
				col_threads_clear(t->threads);
			e->bytes = bytes;
			e->sampled = sampled;
			return err;
		}
		off += size;
		e->sampled -= size / 4;
	}
	t->samples.len = 0;
	t->chain_prev.len = 0;
	t->planned = 1;
	return 0;
}

int trace_columns_enc__add(struct trace_columns_enc *e, const struct bs_hdr *rec)
{
	__u32 type = rec->type, size = rec->size, nf;
	struct col_type *t;
	int err;

	if (type >= BS_REC_TYPE_MAX || size % 8 || size < sizeof(*rec))
		return -EINVAL;
	t = e->t[type];
	if (!t) {
		t = e->t[type] = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
	}
	/* What can fail first: a failed add leaves the chunk as it was. */
	if (buf_reserve(&e->types, 2))
		return -ENOMEM;
	if (t->planned) {
		err = encode_record(e, t, (const __u8 *)rec, size, e->chain);
		if (err)
			return err;
	} else {
		if (buf_reserve(&t->samples, size) || buf_reserve(&t->chain_prev, 8))
			return -ENOMEM;
		nf = size / 4;
		buf_put(&t->samples, rec, size);
		buf_put(&t->chain_prev, &e->chain, 8);
		if (!t->nsamples || size < t->min_size)
			t->min_size = size;
		if (size > t->max_size)
			t->max_size = size;
		t->nsamples++;
		e->sampled += nf;
		/* A plan that fails (memory) leaves the record in the samples: tried again later. */
		if (t->nsamples >= PLAN_SAMPLE)
			plan_type(e, t);
	}
	if (t->chain) /* fields 4, 5 as its type codes them: its end when it has a dur */
		e->chain = rec_ts_or_end((const __u8 *)rec, size);
	t->nrec++;
	memcpy(e->types.p + e->types.len, &(__u16){ (__u16)type }, 2);
	e->types.len += 2;
	e->nrec++;
	return 0;
}

/* T's entry of the directory (type I), deciding which of its columns go in planes. */
static void put_directory_entry(struct col_buf *f, struct col_type *t, __u32 i)
{
	const struct col_plan *pl = &t->plan;
	__u32 j, k, flags;

	t->planemask = 0;
	for (j = 0; j < pl->ncols; j++)
		if (col_planes_measure(t->nlen[j], t->plane_len[j]))
			t->planemask |= 1u << j;
	flags = pl->flags | (t->planemask ? TRACE_COLUMNS_PLANES : 0);
	f->len += trace_varint_put(f->p + f->len, i);
	f->len += trace_varint_put(f->p + f->len, flags);
	f->len += trace_varint_put(f->p + f->len, pl->rawmask);
	if (flags & TRACE_COLUMNS_THREAD)
		f->len += trace_varint_put(f->p + f->len, pl->threadmask);
	if (flags & TRACE_COLUMNS_GAP)
		f->len += trace_varint_put(f->p + f->len, pl->gapword);
	if (flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP))
		f->len += trace_varint_put(f->p + f->len, pl->key);
	if (flags & TRACE_COLUMNS_PLANES)
		f->len += trace_varint_put(f->p + f->len, t->planemask);
	f->len += trace_varint_put(f->p + f->len, pl->ncols);
	for (j = 0; j <= pl->ncols; j++) {
		if (j < pl->ncols && (t->planemask & (1u << j)))
			for (k = 0; k < TRACE_COLUMNS_NPLANES; k++)
				f->len += trace_varint_put(f->p + f->len, t->plane_len[j][k]);
		else
			f->len += trace_varint_put(f->p + f->len, t->col[j].len);
	}
}

int trace_columns_enc__finish(struct trace_columns_enc *e, const __u8 **out, size_t *len)
{
	struct col_buf *f = &e->flat;
	size_t total = e->types.len; /* at most 2 bytes a record's index: as many as a u16 */
	__u32 ntypes = 0, i, j;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];

		if (!t || !t->nrec)
			continue;
		if (!t->planned && plan_type(e, t))
			return -ENOMEM;
		for (j = 0; j <= t->plan.ncols; j++)
			total += t->col[j].len;
		e->index[i] = (__u16)ntypes++;
	}
	f->len = 0;
	if (buf_reserve(f, TRACE_VARINT_MAX * (1 + (size_t)ntypes * (5 * TRACE_COLUMNS_MAX + 9)) +
				   total))
		return -ENOMEM;
	f->len += trace_varint_put(f->p + f->len, ntypes);
	for (i = 0; i < BS_REC_TYPE_MAX; i++)
		if (e->t[i] && e->t[i]->nrec)
			put_directory_entry(f, e->t[i], i);
	for (size_t k = 0; k < e->types.len; k += 2) {
		__u16 type;

		memcpy(&type, e->types.p + k, 2);
		f->len += trace_varint_put(f->p + f->len, e->index[type]);
	}
	/*
	 * Each column is let go once copied: the chunk is in memory once, not twice, however
	 * its bytes are spread (the open chunk is what a recorder's memory is made of).
	 */
	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];

		for (j = 0; t && t->nrec && j <= t->plan.ncols; j++) {
			if (j < t->plan.ncols && (t->planemask & (1u << j))) {
				col_planes_scatter(t->col[j].p, t->col[j].len, f->p + f->len,
						   t->plane_len[j]);
				f->len += t->col[j].len;
			} else {
				buf_put(f, t->col[j].p, t->col[j].len);
			}
			free(t->col[j].p);
			memset(&t->col[j], 0, sizeof(t->col[j]));
		}
	}
	*out = f->p;
	*len = f->len;
	return 0;
}
