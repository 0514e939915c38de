/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Varint record codec: the data chunks of format version 1, and the footer chunk (the data
 * chunks of version 2 are in columns, trace_columns.h). One record is
 *
 *   varint(type) | varint(nwords) | nwords x varint(zigzag(word[i] - prev[type][i]))
 *
 * where word[i] is the i-th little-endian 64-bit word of the record (word 0 holds type, size
 * and cpu), the subtraction wraps modulo 2^64 and prev[type][i] then becomes word[i]. prev
 * starts at zero for every chunk (trace_codec__reset), so a chunk decodes on its own.
 * Consecutive records of one type share most of their words, so most deltas are one byte and
 * zstd finds the rest.
 */
#ifndef BPFSIGHT_TRACE_CODEC_H
#define BPFSIGHT_TRACE_CODEC_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

#define TRACE_CODEC_MIN_WORDS (sizeof(struct bs_hdr) / 8)
#define TRACE_CODEC_MAX_WORDS 8191 /* bs_hdr.size is a u16 multiple of 8 */
#define TRACE_VARINT_MAX      10
/* Worst-case encoded bytes of a record of NWORDS words (type and nwords take <= 2 each). */
#define TRACE_CODEC_ENC_MAX(nwords) (2 + 2 + TRACE_VARINT_MAX * (size_t)(nwords))

struct trace_codec;

struct trace_codec *trace_codec__new(void);
void trace_codec__free(struct trace_codec *c);
/* Forget all previous words: call at the start of every chunk, on both sides. */
void trace_codec__reset(struct trace_codec *c);

/*
 * Encode REC (REC->size bytes) into OUT, which must hold TRACE_CODEC_ENC_MAX(size / 8)
 * bytes. Returns the bytes written, -EINVAL for a record the format cannot hold (size not a
 * multiple of 8 in [24, 65528], type >= BS_REC_TYPE_MAX) or -ENOMEM.
 */
int trace_codec__encode(struct trace_codec *c, const struct bs_hdr *rec, __u8 *out);

/*
 * Decode one record from IN[0..LEN) into WORDS (room for TRACE_CODEC_MAX_WORDS). Returns
 * the bytes consumed and sets *NWORDS, or -EBADMSG when the input is not a valid record
 * (bad varint, out-of-range type or length, word 0 disagreeing with them, input too short),
 * or -ENOMEM. On error the codec state is undefined until the next reset.
 */
int trace_codec__decode(struct trace_codec *c, const __u8 *in, size_t len, __u64 *words,
			__u32 *nwords);

/* Varint primitives (LEB128, 7 bits per byte, low first), shared with tests. */
static inline __u64 trace_zigzag(__u64 v)
{
	return (v << 1) ^ (__u64)((__s64)v >> 63);
}

static inline __u64 trace_unzigzag(__u64 v)
{
	return (v >> 1) ^ -(v & 1);
}

static inline size_t trace_varint_put(__u8 *out, __u64 v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (__u8)v | 0x80;
		v >>= 7;
	}
	out[n++] = (__u8)v;
	return n;
}

/* Returns bytes consumed, 0 if truncated, overlong (> 10 bytes) or overflowing 64 bits. */
static inline size_t trace_varint_get(const __u8 *in, size_t len, __u64 *v)
{
	__u64 r = 0;
	size_t i;

	for (i = 0; i < len && i < TRACE_VARINT_MAX; i++) {
		__u8 b = in[i];

		/* The 10th byte carries bit 63 only. */
		if (i == TRACE_VARINT_MAX - 1 && b > 1)
			return 0;
		r |= (__u64)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

#endif /* BPFSIGHT_TRACE_CODEC_H */
