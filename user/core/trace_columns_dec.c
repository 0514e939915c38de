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
#include "trace_columns.h"

struct cursor {
	const __u8 *p, *end;
};

struct dec_type {
	__u32 prev[TRACE_COLUMNS_MAX];
	__u32 flags, rawmask, ncols;
	__u64 len[TRACE_COLUMNS_MAX + 1]; /* of each column, then of the tail */
	struct cursor col[TRACE_COLUMNS_MAX];
	struct cursor tail;
};

struct trace_columns_dec {
	struct cursor types;
	__u16 slot[BS_REC_TYPE_MAX]; /* index + 1 into t, 0 = not in this chunk */
	struct dec_type t[BS_REC_TYPE_MAX];
	__u32 ntypes;
};

struct trace_columns_dec *trace_columns_dec__new(void)
{
	return calloc(1, sizeof(struct trace_columns_dec));
}

void trace_columns_dec__free(struct trace_columns_dec *d)
{
	free(d);
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

/* Read the directory at IN: type numbers rising, columns within bounds, lengths summed. */
static int read_directory(struct trace_columns_dec *d, const __u8 **p, const __u8 *end,
			  __u64 *total)
{
	__u64 ntypes, type, flags, rawmask, ncols, len;
	int prev_type = -1;
	__u32 i, j;

	if (get_bounded(p, end, BS_REC_TYPE_MAX, &ntypes) || !ntypes)
		return -EBADMSG;
	for (i = 0; i < ntypes; i++) {
		struct dec_type *t = &d->t[i];

		if (get_bounded(p, end, BS_REC_TYPE_MAX - 1, &type) || (int)type <= prev_type ||
		    get_bounded(p, end, TRACE_COLUMNS_END, &flags) ||
		    get_bounded(p, end, 0xffffffffu, &rawmask) ||
		    get_bounded(p, end, TRACE_COLUMNS_MAX, &ncols) || !ncols ||
		    rawmask >> ncols) /* no bit for a column the type does not have */
			return -EBADMSG;
		prev_type = (int)type;
		d->slot[type] = (__u16)(i + 1);
		t->flags = (__u32)flags;
		t->rawmask = (__u32)rawmask;
		t->ncols = (__u32)ncols;
		memset(t->prev, 0, sizeof(t->prev));
		for (j = 0; j <= ncols; j++) {
			/* The lengths are bounded by what the chunk has, so the sum cannot wrap. */
			if (get_bounded(p, end, (__u64)(end - *p), &len))
				return -EBADMSG;
			t->len[j] = len;
			*total += len;
		}
	}
	d->ntypes = (__u32)ntypes;
	return 0;
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

	memset(d->slot, 0, sizeof(d->slot));
	d->ntypes = 0;
	if (read_directory(d, &p, end, &total)) {
		d->ntypes = 0;
		return -EBADMSG;
	}
	if (total + nrecords != (__u64)(end - p)) {
		d->ntypes = 0;
		return -EBADMSG;
	}
	d->types.p = p;
	d->types.end = p + nrecords;
	place_columns(d, d->types.end);
	return 0;
}

static int get_field(struct dec_type *t, __u32 j, __u32 *v)
{
	__u64 z;

	if (get_bounded(&t->col[j].p, t->col[j].end, 0xffffffffu, &z))
		return -EBADMSG;
	if (t->rawmask & (1u << j))
		t->prev[j] = (__u32)z;
	else
		t->prev[j] += (__u32)(z >> 1) ^ -(__u32)(z & 1);
	*v = t->prev[j];
	return 0;
}

int trace_columns_dec__next(struct trace_columns_dec *d, __u64 *words, __u32 *nwords)
{
	__u8 *dst = (__u8 *)words;
	__u32 type, slot, v, size, nf, ncols, j;
	struct dec_type *t;

	if (d->types.p == d->types.end)
		return -EBADMSG;
	type = *d->types.p++;
	slot = d->slot[type];
	if (!slot)
		return -EBADMSG;
	t = &d->t[slot - 1];
	/* Field 0 is type | size << 16: the record's length comes first. */
	if (get_field(t, 0, &v) || (v & 0xffff) != type)
		return -EBADMSG;
	size = v >> 16;
	if (size % 8 || size < sizeof(struct bs_hdr))
		return -EBADMSG;
	nf = size / 4;
	ncols = nf < t->ncols ? nf : t->ncols;
	v = htole32(v);
	memcpy(dst, &v, 4);
	for (j = 1; j < ncols; j++) {
		if (get_field(t, j, &v))
			return -EBADMSG;
		v = htole32(v);
		memcpy(dst + 4 * j, &v, 4);
	}
	if (nf > ncols) {
		size_t n = (size_t)(nf - ncols) * 4;

		if ((size_t)(t->tail.end - t->tail.p) < n)
			return -EBADMSG;
		memcpy(dst + 4 * ncols, t->tail.p, n);
		t->tail.p += n;
	}
	/* Word 2 came as the end, in the records that have a word 3 to take off again. */
	if ((t->flags & TRACE_COLUMNS_END) && size >= 32)
		words[2] = htole64(le64toh(words[2]) - le64toh(words[3]));
	*nwords = size / 8;
	return 0;
}

int trace_columns_dec__end(const struct trace_columns_dec *d)
{
	__u32 i, j;

	if (d->types.p != d->types.end)
		return -EBADMSG;
	for (i = 0; i < d->ntypes; i++) {
		const struct dec_type *t = &d->t[i];

		for (j = 0; j < t->ncols; j++)
			if (t->col[j].p != t->col[j].end)
				return -EBADMSG;
		if (t->tail.p != t->tail.end)
			return -EBADMSG;
	}
	return 0;
}
