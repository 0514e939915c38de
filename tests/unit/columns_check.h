/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the column codec's unit tests share (test_columns.c, test_columns_slots.c): a chunk
 * decoded and compared with the records it was made of, a type's directory entry read back,
 * and a chunk damaged every way (cut, a byte more, each bit flipped).
 */
#ifndef BPFSIGHT_TEST_COLUMNS_CHECK_H
#define BPFSIGHT_TEST_COLUMNS_CHECK_H

#include "format_files.h"
#include "trace_chunk_dec.h"
#include "trace_columns.h"

static __u64 words[TRACE_CODEC_MAX_WORDS];

/* Decode the chunk IN[0..LEN) of RS->n records with a new decoder and compare them with RS. */
static inline int decode_all(const __u8 *in, size_t len, const struct recs *rs)
{
	struct trace_chunk_dec *d = trace_chunk_dec__new();
	__u32 nwords;
	size_t i;
	int err;

	if (!d)
		return -ENOMEM;
	err = trace_chunk_dec__begin(d, BS_CHUNK_COLUMNS, in, len, (__u32)rs->n);
	for (i = 0; !err && i < rs->n; i++) {
		const struct bs_hdr *want = recs_get(rs, i);

		err = trace_chunk_dec__next(d, words, &nwords);
		if (!err && (nwords * 8 != want->size || memcmp(words, want, want->size)))
			err = -EILSEQ;
	}
	if (!err)
		err = trace_chunk_dec__end(d);
	trace_chunk_dec__free(d);
	return err;
}

/* One record type's directory entry in a finished chunk. */
struct dir_entry {
	__u64 flags, rawmask, threadmask, gapword, key, planemask, ncols;
	__u64 len[TRACE_COLUMNS_MAX + 1]; /* each column's bytes (its planes summed), the tail's */
};

/* TYPE's entry of the chunk IN[0..LEN) into E: 0, or -1 when the chunk has no such type. */
static inline int dir_entry_of(const __u8 *in, size_t len, __u32 type, struct dir_entry *e)
{
	__u64 ntypes = 0, t = 0, v = 0;
	size_t k = 0, i, j, p;

	k += trace_varint_get(in + k, len - k, &ntypes);
	for (i = 0; i < ntypes; i++) {
		memset(e, 0, sizeof(*e));
		k += trace_varint_get(in + k, len - k, &t);
		k += trace_varint_get(in + k, len - k, &e->flags);
		k += trace_varint_get(in + k, len - k, &e->rawmask);
		if (e->flags & TRACE_COLUMNS_THREAD)
			k += trace_varint_get(in + k, len - k, &e->threadmask);
		if (e->flags & TRACE_COLUMNS_GAP)
			k += trace_varint_get(in + k, len - k, &e->gapword);
		if (e->flags & (TRACE_COLUMNS_THREAD | TRACE_COLUMNS_GAP))
			k += trace_varint_get(in + k, len - k, &e->key);
		if (e->flags & TRACE_COLUMNS_PLANES)
			k += trace_varint_get(in + k, len - k, &e->planemask);
		k += trace_varint_get(in + k, len - k, &e->ncols);
		for (j = 0; j <= e->ncols; j++) {
			int planes = j < e->ncols && (e->planemask >> j & 1);

			for (p = 0; p < (planes ? TRACE_COLUMNS_NPLANES : 1); p++) {
				k += trace_varint_get(in + k, len - k, &v);
				e->len[j] += v;
			}
		}
		if (t == type)
			return 0;
	}
	return -1;
}

/*
 * CHUNK[0..LEN) (of the records RS) cut anywhere, then each bit flipped: every cut refused,
 * every flip refused or decoded to records (a column byte still a valid varint), never a
 * crash or a read outside the chunk (the fuzzer runs this under ASan). The flips refused.
 */
static inline int check_damage(const __u8 *chunk, size_t len, const struct recs *rs)
{
	__u8 *bad = malloc(len);
	int bit, refused = 0, decoded = 0;
	size_t i;

	if (!ASSERT_TRUE(bad, "memory"))
		return 0;
	ASSERT_EQ(decode_all(chunk, len, rs), 0, "undamaged chunk decodes");
	for (i = 0; i < len; i++)
		if (!ASSERT_EQ(decode_all(chunk, i, rs), -EBADMSG, "cut chunk refused"))
			break;
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			int err;

			memcpy(bad, chunk, len);
			bad[i] ^= (__u8)(1 << bit);
			err = decode_all(bad, len, rs);
			refused += err == -EBADMSG;
			decoded += !err || err == -EILSEQ;
		}
	}
	ASSERT_EQ(refused + decoded, (int)len * 8, "every flip refused or decoded, nothing else");
	/* Column bytes carry no check of their own (the chunk's crc and zstd's do): lengths do. */
	ASSERT_TRUE(refused > 0, "some flipped bits are refused");
	free(bad);
	return refused;
}

#endif /* BPFSIGHT_TEST_COLUMNS_CHECK_H */
