// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Column decoder (trace_columns.h). It trusts nothing: the directory's lengths must add up
 * to the chunk exactly, and every read from a column or tail is bounded by that column.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace_codec.h"
#include "trace_columns_thread.h"

struct cursor {
	const __u8 *p, *end;
};

/* Planes 1 to 4 of a column stored in planes (plane 0 is the column's own cursor). */
struct plane_hi {
	__u64 len[TRACE_COLUMNS_NPLANES - 1];
	struct cursor c[TRACE_COLUMNS_NPLANES - 1];
};

struct dec_type {
	__u32 type;
	__u32 prev[TRACE_COLUMNS_MAX];
	__u32 flags, rawmask, threadmask, gapword, key, planemask, ncols;
	struct col_threads *threads;	  /* kept for the next chunk's type in this place */
	__u64 len[TRACE_COLUMNS_MAX + 1]; /* of each column (its plane 0), then of the tail */
	struct cursor col[TRACE_COLUMNS_MAX];
	struct cursor tail;
	__u32 hi_index[TRACE_COLUMNS_MAX];	/* of a column in planes, into the pool */
	struct plane_hi *hi[TRACE_COLUMNS_MAX]; /* the same, once the pool stopped moving */
};

/* Format 3 and before: a type byte per record, the type itself (types below 256). */
#define BYTE_TYPES 0x100

struct trace_columns_dec {
	struct cursor types;
	__u32 version;		/* of the file: what the types section holds */
	__u16 slot[BYTE_TYPES]; /* format 3: index + 1 into t, 0 = not in this chunk */
	struct dec_type *t;	/* the chunk's types, in directory order */
	__u32 ntypes, tcap;
	__u32 chain[2];	     /* fields 4, 5 as coded of the last record of a CHAIN type */
	struct plane_hi *hi; /* the chunk's columns in planes */
	__u32 nhi, hi_cap;
};

struct trace_columns_dec *trace_columns_dec__new(void)
{
	struct trace_columns_dec *d = calloc(1, sizeof(struct trace_columns_dec));

	if (d)
		d->version = TRACE_COLUMNS_INDEX_VERSION;
	return d;
}

void trace_columns_dec__version(struct trace_columns_dec *d, __u32 version)
{
	d->version = version;
}

void trace_columns_dec__free(struct trace_columns_dec *d)
{
	__u32 i;

	if (!d)
		return;
	for (i = 0; i < d->tcap; i++)
		free(d->t[i].threads);
	free(d->t);
	free(d->hi);
	free(d);
}

/* Room for N types in the directory; a place's thread table is kept for later chunks. */
static int reserve_types(struct trace_columns_dec *d, __u64 n)
{
	struct dec_type *t;
	__u32 cap;

	if (n <= d->tcap)
		return 0;
	cap = d->tcap ? d->tcap : 32;
	while (cap < n)
		cap *= 2;
	t = realloc(d->t, cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + d->tcap, 0, (cap - d->tcap) * sizeof(*t));
	d->t = t;
	d->tcap = cap;
	return 0;
}

/* A varint at *P below END no larger than MAX: 0 and *P advanced, or -EBADMSG. */
static int get_bounded(const __u8 **p, const __u8 *end, __u64 max, __u64 *v)
{
	size_t k = trace_varint_get(*p, (size_t)(end - *p), v);

	if (!k || *v > max)
		return -EBADMSG;
	*p += k;
	return 0;
}

/*
 * The per-thread codings of T, read after its rawmask (FLAGS say which are there), checked
 * against its NCOLS: no per-thread bit on a raw column, on field 0 or 3 (read first, for the
 * size and the thread) or past the columns; the gap word past ts and dur, inside the columns.
 * Its thread table is allocated the first time a type in its place needs one: 0, -EBADMSG or
 * -ENOMEM.
 */
static int read_thread_codings(struct dec_type *t, const __u8 **p, const __u8 *end)
{
	__u64 threadmask = 0, gapword = 0, key = 0, planemask = 0;

	if ((t->flags & TRACE_COLUMNS_THREAD) &&
	    (get_bounded(p, end, 0xffffffffu, &threadmask) || !threadmask))
		return -EBADMSG;
	if ((t->flags & TRACE_COLUMNS_GAP) &&
	    (get_bounded(p, end, TRACE_COLUMNS_MAX / 2, &gapword) || gapword < 4))
		return -EBADMSG;
	if ((t->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)) &&
	    get_bounded(p, end, TRACE_COLUMNS_MAX - 1, &key))
		return -EBADMSG;
	if ((t->flags & TRACE_COLUMNS_PLANES) &&
	    (get_bounded(p, end, 0xffffffffu, &planemask) || !planemask))
		return -EBADMSG;
	t->threadmask = (__u32)threadmask;
	t->gapword = (__u32)gapword;
	t->key = (__u32)key;
	t->planemask = (__u32)planemask;
	if (!(t->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)) || t->threads)
		return 0;
	t->threads = col_threads_new();
	return t->threads ? 0 : -ENOMEM;
}

static int codings_fit(const struct dec_type *t)
{
	if ((__u64)t->rawmask >> t->ncols || (__u64)t->threadmask >> t->ncols ||
	    (__u64)t->planemask >> t->ncols || t->threadmask & t->rawmask ||
	    t->threadmask & (1u | 1u << t->key))
		return 0;
	/* The key: in the columns, read as is (not ts, not the gap word). */
	if ((t->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)) &&
	    (t->key >= t->ncols || t->key == 0 || t->key == 4 || t->key == 5 ||
	     (t->gapword && t->key / 2 == t->gapword)))
		return 0;
	if ((t->flags & TRACE_COLUMNS_CHAIN) && (!(t->flags & TRACE_COLUMNS_END) || t->ncols < 6))
		return 0;
	return !t->gapword || 2 * t->gapword + 2 <= t->ncols;
}

/* The lengths of planes 1 to 4 of T's column J, into a new entry of the pool. */
static int read_planes(struct trace_columns_dec *d, struct dec_type *t, __u32 j, const __u8 **p,
		       const __u8 *end, __u64 *total)
{
	struct plane_hi *hi;
	__u32 k;

	if (d->nhi == d->hi_cap) {
		__u32 cap = d->hi_cap ? 2 * d->hi_cap : 16;

		hi = realloc(d->hi, cap * sizeof(*hi));
		if (!hi)
			return -ENOMEM;
		d->hi = hi;
		d->hi_cap = cap;
	}
	hi = &d->hi[d->nhi];
	t->hi_index[j] = d->nhi++;
	for (k = 0; k < TRACE_COLUMNS_NPLANES - 1; k++) {
		if (get_bounded(p, end, (__u64)(end - *p), &hi->len[k]))
			return -EBADMSG;
		*total += hi->len[k];
	}
	return 0;
}

/* Read the directory at IN: type numbers rising, columns within bounds, lengths summed. */
static int read_directory(struct trace_columns_dec *d, const __u8 **p, const __u8 *end,
			  __u64 *total)
{
	__u32 types = d->version < TRACE_COLUMNS_INDEX_VERSION ? BYTE_TYPES : BS_REC_TYPE_MAX;
	__u64 ntypes, type, flags, rawmask, ncols, len;
	int prev_type = -1, err;
	__u32 i, j;

	if (get_bounded(p, end, types, &ntypes) || !ntypes)
		return -EBADMSG;
	err = reserve_types(d, ntypes);
	if (err)
		return err;
	for (i = 0; i < ntypes; i++) {
		struct dec_type *t = &d->t[i];

		if (get_bounded(p, end, types - 1, &type) || (int)type <= prev_type ||
		    get_bounded(p, end, TRACE_COLUMNS_FLAGS, &flags) ||
		    get_bounded(p, end, 0xffffffffu, &rawmask))
			return -EBADMSG;
		t->flags = (__u32)flags;
		t->rawmask = (__u32)rawmask;
		err = read_thread_codings(t, p, end);
		if (err)
			return err;
		if (get_bounded(p, end, TRACE_COLUMNS_MAX, &ncols) || !ncols)
			return -EBADMSG;
		t->ncols = (__u32)ncols;
		if (!codings_fit(t))
			return -EBADMSG;
		prev_type = (int)type;
		t->type = (__u32)type;
		if (type < BYTE_TYPES)
			d->slot[type] = (__u16)(i + 1);
		memset(t->prev, 0, sizeof(t->prev));
		if (t->threads)
			col_threads_clear(t->threads);
		for (j = 0; j <= ncols; j++) {
			/* The lengths are bounded by what the chunk has, so the sum cannot wrap. */
			if (get_bounded(p, end, (__u64)(end - *p), &len))
				return -EBADMSG;
			t->len[j] = len;
			*total += len;
			if (j < ncols && (t->planemask & (1u << j))) {
				err = read_planes(d, t, j, p, end, total);
				if (err)
					return err;
			}
		}
	}
	d->ntypes = (__u32)ntypes;
	return 0;
}

/* Planes 1 to 4 of T's column J, when it is in planes, from P on: returns their end. */
static const __u8 *place_planes(struct trace_columns_dec *d, struct dec_type *t, __u32 j,
				const __u8 *p)
{
	struct plane_hi *hi;
	__u32 k;

	t->hi[j] = NULL;
	if (!(t->planemask & (1u << j)))
		return p;
	hi = t->hi[j] = &d->hi[t->hi_index[j]];
	for (k = 0; k < TRACE_COLUMNS_NPLANES - 1; k++) {
		hi->c[k].p = p;
		p += hi->len[k];
		hi->c[k].end = p;
	}
	return p;
}

/* The columns and tails lie back to back from P on, in directory order. */
static void place_columns(struct trace_columns_dec *d, const __u8 *p)
{
	__u32 i, j;

	for (i = 0; i < d->ntypes; i++) {
		struct dec_type *t = &d->t[i];

		for (j = 0; j < t->ncols; j++) {
			t->col[j].p = p;
			p += t->len[j];
			t->col[j].end = p;
			p = place_planes(d, t, j, p);
		}
		t->tail.p = p;
		p += t->len[t->ncols];
		t->tail.end = p;
	}
}

int trace_columns_dec__begin(struct trace_columns_dec *d, const __u8 *in, size_t len,
			     __u32 nrecords)
{
	const __u8 *p = in, *end = in + len;
	__u64 total = 0;

	int err;

	memset(d->slot, 0, sizeof(d->slot));
	memset(d->chain, 0, sizeof(d->chain));
	d->ntypes = 0;
	d->nhi = 0;
	err = read_directory(d, &p, end, &total);
	if (err) {
		d->ntypes = 0;
		return err;
	}
	/*
	 * Format 4: the types section is the rest, a varint per record (its index in the
	 * directory); before, a byte per record (its type).
	 */
	if (total + nrecords > (__u64)(end - p) ||
	    (d->version < TRACE_COLUMNS_INDEX_VERSION && total + nrecords != (__u64)(end - p))) {
		d->ntypes = 0;
		return -EBADMSG;
	}
	d->types.p = p;
	d->types.end = end - total;
	place_columns(d, d->types.end);
	return 0;
}

/* A u32's varint whose byte k is the next byte of plane k: 0, or -EBADMSG. */
static int get_planed(struct cursor *plane0, struct plane_hi *hi, __u64 *v)
{
	struct cursor *c = plane0;
	__u64 r = 0;
	__u32 k;

	for (k = 0; k < TRACE_COLUMNS_NPLANES; k++) {
		__u8 b;

		if (k)
			c = &hi->c[k - 1];
		if (c->p == c->end)
			return -EBADMSG;
		b = *c->p++;
		if (k == TRACE_COLUMNS_NPLANES - 1 && b > 0x0f) /* past 32 bits */
			return -EBADMSG;
		r |= (__u64)(b & 0x7f) << (7 * k);
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EBADMSG;
}

/*
 * Field J of the next record into V; S: the record's thread (NULL: not looked up yet);
 * CHAIN: the chain's fields 4, 5 when the type is in it, else NULL.
 */
static int get_field(struct dec_type *t, const struct col_thread *s, const __u32 *chain, __u32 j,
		     __u32 *v)
{
	__u64 z;
	__u32 d;

	if (t->hi[j] ? get_planed(&t->col[j], t->hi[j], &z)
		     : get_bounded(&t->col[j].p, t->col[j].end, 0xffffffffu, &z))
		return -EBADMSG;
	d = (__u32)(z >> 1) ^ -(__u32)(z & 1);
	if (t->rawmask & (1u << j))
		t->prev[j] = (__u32)z;
	else if (t->threadmask & (1u << j))
		t->prev[j] = s->prev[j] + d;
	else if (chain && (j == 4 || j == 5))
		t->prev[j] = chain[j - 4] + d;
	else
		t->prev[j] += d;
	*v = t->prev[j];
	return 0;
}

/*
 * The record's N column fields into V (as coded) and DST. Field 0 (the size, checked by the
 * caller) is there; the key field (the tid, or another) comes next: the per-slot codings need
 * its slot, which is set in *S (NULL when the record is too short to have the key).
 */
static int get_fields(struct dec_type *t, const __u32 *chain, __u32 n, __u32 *v, __u8 *dst,
		      struct col_thread **s)
{
	static const struct col_thread none; /* what a record out of the slots is coded against */
	const struct col_thread *ps = &none;
	__u32 j, le, key = 0;

	*s = NULL;
	if ((t->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP)) && t->key < n) {
		key = t->key;
		if (get_field(t, NULL, chain, key, &v[key]))
			return -EBADMSG;
		*s = col_thread_of(t->threads, v[key]);
		ps = *s;
	}
	for (j = 1; j < n; j++) {
		if (j == key)
			continue;
		if (get_field(t, ps, chain, j, &v[j]))
			return -EBADMSG;
	}
	for (j = 1; j < n; j++) {
		le = htole32(v[j]);
		memcpy(dst + 4 * j, &le, 4);
	}
	return 0;
}

/* Undo END and GAP in the record at WORDS of SIZE bytes, then note it in its slot S. */
static void finish_record(const struct dec_type *t, struct col_thread *s, const __u32 *v, __u32 n,
			  __u64 *words, __u32 size)
{
	__u32 w = t->gapword;

	/* Word 2 came as the end, in the records that have a word 3 to take off again. */
	if ((t->flags & TRACE_COLUMNS_END) && size >= 32)
		words[2] = htole64(le64toh(words[2]) - le64toh(words[3]));
	if (!s)
		return;
	if (w && size >= 8 * (w + 1))
		words[w] = htole64(le64toh(words[w]) + col_thread_gap(s, le64toh(words[2])));
	col_thread_note(s, v, n, (const __u8 *)words, size);
}

int trace_columns_dec__next(struct trace_columns_dec *d, __u64 *words, __u32 *nwords)
{
	__u8 *dst = (__u8 *)words;
	__u32 type, v[TRACE_COLUMNS_MAX], size, nf, ncols, le, *chain;
	struct col_thread *s;
	struct dec_type *t;
	__u64 index;

	if (d->version < TRACE_COLUMNS_INDEX_VERSION) {
		if (d->types.p == d->types.end || !d->slot[*d->types.p])
			return -EBADMSG;
		index = d->slot[*d->types.p++] - 1u;
	} else if (!d->ntypes || get_bounded(&d->types.p, d->types.end, d->ntypes - 1, &index)) {
		return -EBADMSG;
	}
	t = &d->t[index];
	type = t->type;
	/* Field 0 is type | size << 16: the record's length comes first. */
	if (get_field(t, NULL, NULL, 0, &v[0]) || (v[0] & 0xffff) != type)
		return -EBADMSG;
	size = v[0] >> 16;
	if (size % 8 || size < sizeof(struct bs_hdr))
		return -EBADMSG;
	nf = size / 4;
	ncols = nf < t->ncols ? nf : t->ncols;
	le = htole32(v[0]);
	memcpy(dst, &le, 4);
	chain = t->flags & TRACE_COLUMNS_CHAIN ? d->chain : NULL;
	if (get_fields(t, chain, ncols, v, dst, &s))
		return -EBADMSG;
	if (chain) { /* ncols >= 6 (codings_fit): fields 4, 5 are in the columns, as coded */
		memcpy(d->chain, dst + 16, 8);
		d->chain[0] = le32toh(d->chain[0]);
		d->chain[1] = le32toh(d->chain[1]);
	}
	if (nf > ncols) {
		size_t n = (size_t)(nf - ncols) * 4;

		if ((size_t)(t->tail.end - t->tail.p) < n)
			return -EBADMSG;
		memcpy(dst + 4 * ncols, t->tail.p, n);
		t->tail.p += n;
	}
	finish_record(t, s, v, ncols, words, size);
	*nwords = size / 8;
	return 0;
}

int trace_columns_dec__end(const struct trace_columns_dec *d)
{
	__u32 i, j, k;

	if (d->types.p != d->types.end)
		return -EBADMSG;
	for (i = 0; i < d->ntypes; i++) {
		const struct dec_type *t = &d->t[i];

		for (j = 0; j < t->ncols; j++) {
			if (t->col[j].p != t->col[j].end)
				return -EBADMSG;
			for (k = 0; t->hi[j] && k < TRACE_COLUMNS_NPLANES - 1; k++)
				if (t->hi[j]->c[k].p != t->hi[j]->c[k].end)
					return -EBADMSG;
		}
		if (t->tail.p != t->tail.end)
			return -EBADMSG;
	}
	return 0;
}
