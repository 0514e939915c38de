// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Per-type delta + zigzag + varint codec for records inside a chunk (see trace_codec.h). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "trace_codec.h"

/*
 * Previous words of one type. Grown on demand to the longest record of the type seen so far
 * (usually once per type per process), so the hot path never allocates; `used` bounds what a
 * reset has to clear.
 */
struct codec_prev {
	__u64 *w;
	__u32 cap;
	__u32 used;
};

struct trace_codec {
	struct codec_prev t[BS_REC_TYPE_MAX];
};

struct trace_codec *trace_codec__new(void)
{
	return calloc(1, sizeof(struct trace_codec));
}

void trace_codec__free(struct trace_codec *c)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < BS_REC_TYPE_MAX; i++)
		free(c->t[i].w);
	free(c);
}

void trace_codec__reset(struct trace_codec *c)
{
	int i;

	for (i = 0; i < BS_REC_TYPE_MAX; i++) {
		struct codec_prev *p = &c->t[i];

		if (p->used) {
			memset(p->w, 0, p->used * sizeof(*p->w));
			p->used = 0;
		}
	}
}

/* Make P hold NWORDS words; words never used since the last reset read as zero. */
static int prev_reserve(struct codec_prev *p, __u32 nwords)
{
	__u32 cap;
	__u64 *w;

	if (nwords > p->cap) {
		cap = p->cap ? p->cap : 8;
		while (cap < nwords)
			cap *= 2;
		w = realloc(p->w, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		memset(w + p->cap, 0, (cap - p->cap) * sizeof(*w));
		p->w = w;
		p->cap = cap;
	}
	if (nwords > p->used)
		p->used = nwords;
	return 0;
}

int trace_codec__encode(struct trace_codec *c, const struct bs_hdr *rec, __u8 *out)
{
	const __u8 *src = (const __u8 *)rec;
	__u32 type = rec->type, nwords = rec->size / 8, i;
	struct codec_prev *p;
	size_t n = 0;
	int err;

	if (type >= BS_REC_TYPE_MAX || rec->size % 8 || nwords < TRACE_CODEC_MIN_WORDS)
		return -EINVAL;
	p = &c->t[type];
	err = prev_reserve(p, nwords);
	if (err)
		return err;

	n += trace_varint_put(out + n, type);
	n += trace_varint_put(out + n, nwords);
	for (i = 0; i < nwords; i++) {
		__u64 w;

		memcpy(&w, src + 8 * i, sizeof(w));
		w = le64toh(w);
		n += trace_varint_put(out + n, trace_zigzag(w - p->w[i]));
		p->w[i] = w;
	}
	return (int)n;
}

int trace_codec__decode(struct trace_codec *c, const __u8 *in, size_t len, __u64 *words,
			__u32 *nwords)
{
	__u64 type, nw, v;
	struct codec_prev *p;
	size_t n = 0, k;
	__u32 i;
	int err;

	k = trace_varint_get(in, len, &type);
	if (!k || type >= BS_REC_TYPE_MAX)
		return -EBADMSG;
	n += k;
	k = trace_varint_get(in + n, len - n, &nw);
	if (!k || nw < TRACE_CODEC_MIN_WORDS || nw > TRACE_CODEC_MAX_WORDS)
		return -EBADMSG;
	n += k;
	/* Each word takes at least one byte: refuse early rather than grow prev for nothing. */
	if (len - n < nw)
		return -EBADMSG;

	p = &c->t[type];
	err = prev_reserve(p, (__u32)nw);
	if (err)
		return err;
	for (i = 0; i < nw; i++) {
		k = trace_varint_get(in + n, len - n, &v);
		if (!k)
			return -EBADMSG;
		n += k;
		p->w[i] += trace_unzigzag(v);
		words[i] = htole64(p->w[i]);
	}
	/* Word 0 is type | size << 16 | cpu << 32: it must agree with what framed the record. */
	if ((p->w[0] & 0xffff) != type || ((p->w[0] >> 16) & 0xffff) != nw * 8)
		return -EBADMSG;
	*nwords = (__u32)nw;
	return (int)n;
}
