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
#include "trace_columns.h"

#define PLAN_SAMPLE   1024 /* records of a type whose costs choose its coding, per chunk */
#define VARIABLE_HEAD 32   /* bytes in columns of a record type whose length varies */

struct col_buf {
	__u8 *p;
	size_t len, cap;
};

/* The coding chosen for a type, as the directory says it. */
struct col_plan {
	__u32 flags;   /* TRACE_COLUMNS_END */
	__u32 rawmask; /* bit j: column j holds the values, not their deltas */
	__u32 ncols;
};

/* One record type in this chunk, allocated the first time the type is seen. */
struct col_type {
	struct col_buf samples;			   /* its first records, until planned */
	struct col_buf col[TRACE_COLUMNS_MAX + 1]; /* its columns, then its tail */
	__u32 nrec, nsamples;
	int planned;
	struct col_plan plan;
	__u32 min_size, max_size;	   /* of the samples: the end needs word 3 in each */
	__u32 enc_prev[TRACE_COLUMNS_MAX]; /* the fields last written to each column */
	/* Sampling: varint bytes each choice would take (the proxy for what zstd leaves). */
	__u32 prev[TRACE_COLUMNS_MAX];
	__u64 prev_ts, prev_end;
	__u64 cost_delta[TRACE_COLUMNS_MAX], cost_raw[TRACE_COLUMNS_MAX];
	__u64 cost_ts, cost_end;
};

struct trace_columns_enc {
	struct col_type *t[BS_REC_TYPE_MAX];
	struct col_buf types; /* one byte per record */
	struct col_buf flat;  /* finish(): the whole chunk */
	size_t bytes;	      /* in the columns and tails */
	size_t sampled;	      /* estimate for the records kept as samples: a byte a field */
	__u32 nrec;
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

static unsigned int varint_len(__u64 v)
{
	return v ? (unsigned int)(64 - __builtin_clzll(v) + 6) / 7 : 1;
}

static __u32 zigzag32(__u32 d)
{
	return (d << 1) ^ (__u32)((__s32)d >> 31);
}

static __u64 get64(const __u8 *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
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
		if (e->t[i])
			free(e->t[i]->samples.p);
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
		struct col_buf keep[TRACE_COLUMNS_MAX + 2];

		if (!t || !t->nrec)
			continue;
		/* The buffers stay for the next chunk; the counts, costs and delta state go. */
		keep[0] = t->samples;
		memcpy(keep + 1, t->col, sizeof(t->col));
		memset(t, 0, sizeof(*t));
		t->samples = keep[0];
		t->samples.len = 0;
		memcpy(t->col, keep + 1, sizeof(t->col));
		for (j = 0; j <= TRACE_COLUMNS_MAX; j++)
			t->col[j].len = 0;
	}
	/* The laid-out chunk has been compressed: its memory goes too (see finish). */
	free(e->flat.p);
	memset(&e->flat, 0, sizeof(e->flat));
	e->types.len = 0;
	e->bytes = e->sampled = 0;
	e->nrec = 0;
}

size_t trace_columns_enc__size(const struct trace_columns_enc *e)
{
	return e->bytes + e->sampled + e->types.len;
}

__u32 trace_columns_enc__records(const struct trace_columns_enc *e)
{
	return e->nrec;
}

/* What the record's fields would cost coded against the type's previous record. */
static void count_costs(struct col_type *t, const __u8 *src, __u32 ncols, __u32 size)
{
	__u64 ts = get64(src + 16), end;
	__u32 j, v;

	for (j = 0; j < ncols; j++) {
		memcpy(&v, src + 4 * j, sizeof(v));
		v = le32toh(v);
		t->cost_delta[j] += varint_len(zigzag32(v - t->prev[j]));
		t->cost_raw[j] += varint_len(v);
		t->prev[j] = v;
	}
	t->cost_ts += varint_len(trace_zigzag(ts - t->prev_ts));
	t->prev_ts = ts;
	if (size >= 32) {
		end = ts + get64(src + 24);
		t->cost_end += varint_len(trace_zigzag(end - t->prev_end));
		t->prev_end = end;
	}
}

/* A record's fields as the plan codes them: with END, fields 4, 5 hold the end. */
static void load_fields(const __u8 *r, __u32 n, __u32 size, __u32 flags, __u32 *v)
{
	__u32 j;

	memcpy(v, r, (size_t)n * 4);
	for (j = 0; j < n; j++)
		v[j] = le32toh(v[j]);
	if ((flags & TRACE_COLUMNS_END) && size >= 32) {
		__u64 end = get64(r + 16) + get64(r + 24);

		v[4] = (__u32)end;
		v[5] = (__u32)(end >> 32);
	}
}

/* Write record R to its type's columns and tail. 0 or -ENOMEM (nothing written then). */
static int encode_record(struct trace_columns_enc *e, struct col_type *t, const __u8 *r, __u32 size)
{
	__u32 nf = size / 4, n = nf < t->plan.ncols ? nf : t->plan.ncols, v[TRACE_COLUMNS_MAX], j;
	size_t bytes = (size_t)(nf - n) * 4;

	for (j = 0; j < n; j++)
		if (buf_reserve(&t->col[j], TRACE_VARINT_MAX))
			return -ENOMEM;
	if (buf_reserve(&t->col[t->plan.ncols], (size_t)(nf - n) * 4))
		return -ENOMEM;
	load_fields(r, n, size, t->plan.flags, v);
	for (j = 0; j < n; j++) {
		struct col_buf *c = &t->col[j];
		__u32 x = t->plan.rawmask & (1u << j) ? v[j] : zigzag32(v[j] - t->enc_prev[j]);
		size_t k = trace_varint_put(c->p + c->len, x);

		c->len += k;
		bytes += k;
		t->enc_prev[j] = v[j];
	}
	buf_put(&t->col[t->plan.ncols], r + 4 * n, (size_t)(nf - n) * 4);
	e->bytes += bytes;
	return 0;
}

/*
 * Choose T's coding from its samples' costs, then split the samples into columns. A type
 * gets a column for each field its shortest sample has (at most 32); one whose records vary
 * in length (strings, stacks) only for their common head, so that their text and frames stay
 * together in the tail, where zstd finds what repeats.
 */
static int plan_type(struct trace_columns_enc *e, struct col_type *t)
{
	size_t off, bytes = e->bytes, sampled = e->sampled;
	struct col_plan *pl = &t->plan;
	__u32 j;
	int err;

	memset(pl, 0, sizeof(*pl));
	pl->ncols = t->min_size / 4 < TRACE_COLUMNS_MAX ? t->min_size / 4 : TRACE_COLUMNS_MAX;
	if (t->max_size != t->min_size && pl->ncols > VARIABLE_HEAD / 4)
		pl->ncols = VARIABLE_HEAD / 4;
	if (t->min_size >= 32 && t->cost_end < t->cost_ts)
		pl->flags |= TRACE_COLUMNS_END;
	/* The timestamp's halves (fields 4, 5) stay deltas: their costs were counted whole. */
	for (j = 0; j < pl->ncols; j++)
		if (j != 4 && j != 5 && t->cost_raw[j] < t->cost_delta[j])
			pl->rawmask |= 1u << j;
	for (off = 0; off < t->samples.len;) {
		const __u8 *r = t->samples.p + off;
		__u32 size = get64(r) >> 16 & 0xffff;

		err = encode_record(e, t, r, size);
		if (err) { /* as it was: all the records still in the samples */
			for (j = 0; j <= TRACE_COLUMNS_MAX; j++)
				t->col[j].len = 0;
			memset(t->enc_prev, 0, sizeof(t->enc_prev));
			e->bytes = bytes;
			e->sampled = sampled;
			return err;
		}
		off += size;
		e->sampled -= size / 4;
	}
	t->samples.len = 0;
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
	if (buf_reserve(&e->types, 1))
		return -ENOMEM;
	if (t->planned) {
		err = encode_record(e, t, (const __u8 *)rec, size);
		if (err)
			return err;
	} else {
		if (buf_reserve(&t->samples, size))
			return -ENOMEM;
		nf = size / 4;
		count_costs(t, (const __u8 *)rec, nf < TRACE_COLUMNS_MAX ? nf : TRACE_COLUMNS_MAX,
			    size);
		buf_put(&t->samples, rec, size);
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
	t->nrec++;
	e->types.p[e->types.len++] = (__u8)type;
	e->nrec++;
	return 0;
}

int trace_columns_enc__finish(struct trace_columns_enc *e, const __u8 **out, size_t *len)
{
	struct col_buf *f = &e->flat;
	size_t total = e->types.len;
	__u32 ntypes = 0, i, j;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];

		if (!t || !t->nrec)
			continue;
		if (!t->planned && plan_type(e, t))
			return -ENOMEM;
		for (j = 0; j <= t->plan.ncols; j++)
			total += t->col[j].len;
		ntypes++;
	}
	f->len = 0;
	if (buf_reserve(f,
			TRACE_VARINT_MAX * (1 + (size_t)ntypes * (TRACE_COLUMNS_MAX + 5)) + total))
		return -ENOMEM;
	f->len += trace_varint_put(f->p + f->len, ntypes);
	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		const struct col_type *t = e->t[i];

		if (!t || !t->nrec)
			continue;
		f->len += trace_varint_put(f->p + f->len, i);
		f->len += trace_varint_put(f->p + f->len, t->plan.flags);
		f->len += trace_varint_put(f->p + f->len, t->plan.rawmask);
		f->len += trace_varint_put(f->p + f->len, t->plan.ncols);
		for (j = 0; j <= t->plan.ncols; j++)
			f->len += trace_varint_put(f->p + f->len, t->col[j].len);
	}
	buf_put(f, e->types.p, e->types.len);
	/*
	 * Each column is let go once copied: the chunk is in memory once, not twice, however
	 * its bytes are spread (the open chunk is what a recorder's memory is made of).
	 */
	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];

		for (j = 0; t && t->nrec && j <= t->plan.ncols; j++) {
			buf_put(f, t->col[j].p, t->col[j].len);
			free(t->col[j].p);
			memset(&t->col[j], 0, sizeof(t->col[j]));
		}
	}
	*out = f->p;
	*len = f->len;
	return 0;
}
