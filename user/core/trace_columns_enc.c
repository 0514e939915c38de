// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Column encoder (trace_columns.h). add() keeps each type's records whole, in their own
 * buffer, and counts what each coding choice would cost; finish() makes the choices (per
 * column: delta or raw; per type: timestamp or end) and writes the columns.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace_codec.h"
#include "trace_columns.h"

#define PLAN_SAMPLE 1024 /* records of a type whose costs are counted, per chunk */

struct col_buf {
	__u8 *p;
	size_t len, cap;
};

/* One record type's records in this chunk, allocated the first time the type is seen. */
struct col_type {
	struct col_buf recs;
	struct col_buf col[TRACE_COLUMNS_MAX + 1]; /* finish(): its columns, then its tail */
	__u32 nrec;
	__u32 ncols;	/* finish(): its columns, the fields all its records have (<= 32) */
	__u32 min_size; /* of its records: the end coding needs word 3 in each */
	__u32 prev[TRACE_COLUMNS_MAX];
	__u64 prev_ts, prev_end;
	/* Varint bytes each choice would take (the proxy for what zstd leaves of it). */
	__u64 cost_delta[TRACE_COLUMNS_MAX], cost_raw[TRACE_COLUMNS_MAX];
	__u64 cost_ts, cost_end;
};

/* The coding finish() chose for a type, as the directory says it. */
struct col_plan {
	__u32 flags;   /* TRACE_COLUMNS_END */
	__u32 rawmask; /* bit j: column j holds the values, not their deltas */
	__u64 len[TRACE_COLUMNS_MAX + 1];
};

struct trace_columns_enc {
	struct col_type *t[BS_REC_TYPE_MAX];
	struct col_buf types; /* one byte per record */
	struct col_buf flat;  /* finish(): the whole chunk */
	struct col_plan plans[BS_REC_TYPE_MAX];
	size_t bytes; /* estimate of the columns' bytes */
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
			free(e->t[i]->recs.p);
		free(e->t[i]);
	}
	free(e->types.p);
	free(e->flat.p);
	free(e);
}

void trace_columns_enc__reset(struct trace_columns_enc *e)
{
	int i;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct col_type *t = e->t[i];

		if (!t || !t->nrec)
			continue;
		/* The buffers stay for the next chunk; the counts and the delta state go. */
		t->recs.len = 0;
		t->nrec = t->ncols = t->min_size = 0;
		t->prev_ts = t->prev_end = t->cost_ts = t->cost_end = 0;
		memset(t->prev, 0, sizeof(t->prev));
		memset(t->cost_delta, 0, sizeof(t->cost_delta));
		memset(t->cost_raw, 0, sizeof(t->cost_raw));
	}
	e->types.len = 0;
	e->bytes = 0;
	e->nrec = 0;
}

size_t trace_columns_enc__size(const struct trace_columns_enc *e)
{
	return e->bytes + e->types.len;
}

__u32 trace_columns_enc__records(const struct trace_columns_enc *e)
{
	return e->nrec;
}

static __u64 get64(const __u8 *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
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

int trace_columns_enc__add(struct trace_columns_enc *e, const struct bs_hdr *rec)
{
	__u32 type = rec->type, size = rec->size, nf, ncols;
	struct col_type *t;

	if (type >= BS_REC_TYPE_MAX || size % 8 || size < sizeof(*rec))
		return -EINVAL;
	t = e->t[type];
	if (!t) {
		t = e->t[type] = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
	}
	/* Everything that can fail first: a failed add leaves the chunk as it was. */
	if (buf_reserve(&e->types, 1) || buf_reserve(&t->recs, size))
		return -ENOMEM;
	nf = size / 4;
	ncols = nf < TRACE_COLUMNS_MAX ? nf : TRACE_COLUMNS_MAX; /* at most, for the costs */
	/* A type's first records in the chunk decide its coding: the rest are alike. */
	if (t->nrec < PLAN_SAMPLE)
		count_costs(t, (const __u8 *)rec, ncols, size);
	buf_put(&t->recs, rec, size);
	if (!t->nrec || size < t->min_size)
		t->min_size = size;
	t->nrec++;
	e->bytes += ncols + (size_t)(nf - ncols) * 4; /* at least a byte a field */
	e->types.p[e->types.len++] = (__u8)type;
	e->nrec++;
	return 0;
}

static void plan_type(const struct col_type *t, struct col_plan *pl)
{
	__u32 j;

	memset(pl, 0, sizeof(*pl));
	if (t->min_size >= 32 && t->cost_end < t->cost_ts)
		pl->flags |= TRACE_COLUMNS_END;
	/* The timestamp's halves (fields 4, 5) stay deltas: their costs were counted whole. */
	for (j = 0; j < t->ncols; j++)
		if (j != 4 && j != 5 && t->cost_raw[j] < t->cost_delta[j])
			pl->rawmask |= 1u << j;
}

/* A record's fields as the plan codes them: fields 4, 5 hold the end with the END flag. */
static void load_fields(const __u8 *r, __u32 ncols, __u32 flags, __u32 *v)
{
	__u32 j;

	memcpy(v, r, (size_t)ncols * 4);
	for (j = 0; j < ncols; j++)
		v[j] = le32toh(v[j]);
	if (flags & TRACE_COLUMNS_END) {
		__u64 end = get64(r + 16) + get64(r + 24);

		v[4] = (__u32)end;
		v[5] = (__u32)(end >> 32);
	}
}

/* Split one type's records into its columns and tail (t->col), in one pass over them. */
static int write_type(struct col_type *t, struct col_plan *pl)
{
	__u32 prev[TRACE_COLUMNS_MAX] = { 0 }, v[TRACE_COLUMNS_MAX], j;
	size_t off;

	for (j = 0; j < t->ncols; j++) {
		t->col[j].len = 0;
		if (buf_reserve(&t->col[j], (size_t)t->nrec * 5))
			return -ENOMEM;
	}
	t->col[t->ncols].len = 0;
	if (buf_reserve(&t->col[t->ncols], t->recs.len))
		return -ENOMEM;
	for (off = 0; off < t->recs.len;) {
		const __u8 *r = t->recs.p + off;
		__u32 size = get64(r) >> 16 & 0xffff, nf = size / 4;
		__u32 ncols = t->ncols;

		load_fields(r, ncols, pl->flags, v);
		for (j = 0; j < ncols; j++) {
			struct col_buf *c = &t->col[j];
			__u32 x = pl->rawmask & (1u << j) ? v[j] : zigzag32(v[j] - prev[j]);

			c->len += trace_varint_put(c->p + c->len, x);
			prev[j] = v[j];
		}
		if (nf > ncols) /* the tail */
			buf_put(&t->col[t->ncols], r + 4 * ncols, (size_t)(nf - ncols) * 4);
		off += size;
	}
	for (j = 0; j <= t->ncols; j++)
		pl->len[j] = t->col[j].len;
	return 0;
}

int trace_columns_enc__finish(struct trace_columns_enc *e, const __u8 **out, size_t *len)
{
	struct col_plan *plans = e->plans;
	struct col_buf *f = &e->flat;
	__u32 ntypes = 0, i, j;

	size_t total = e->types.len;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		if (!e->t[i] || !e->t[i]->nrec)
			continue;
		/*
		 * Columns for the fields every record of the type has; what only some have (the
		 * text of strings, the frames of stacks) stays together in the tail, where zstd
		 * finds what repeats.
		 */
		e->t[i]->ncols = e->t[i]->min_size / 4;
		if (e->t[i]->ncols > TRACE_COLUMNS_MAX)
			e->t[i]->ncols = TRACE_COLUMNS_MAX;
		plan_type(e->t[i], &plans[i]);
		if (write_type(e->t[i], &plans[i]))
			return -ENOMEM;
		for (j = 0; j <= e->t[i]->ncols; j++)
			total += plans[i].len[j];
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
		f->len += trace_varint_put(f->p + f->len, plans[i].flags);
		f->len += trace_varint_put(f->p + f->len, plans[i].rawmask);
		f->len += trace_varint_put(f->p + f->len, t->ncols);
		for (j = 0; j <= t->ncols; j++)
			f->len += trace_varint_put(f->p + f->len, plans[i].len[j]);
	}
	buf_put(f, e->types.p, e->types.len);
	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		const struct col_type *t = e->t[i];

		for (j = 0; t && t->nrec && j <= t->ncols; j++)
			buf_put(f, t->col[j].p, t->col[j].len);
	}
	*out = f->p;
	*len = f->len;
	return 0;
}
