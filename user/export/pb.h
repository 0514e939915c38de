/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal protocol-buffers encoder, enough for Perfetto traces: varints, zigzag, fixed64,
 * length-delimited bytes and nested messages, appended to one growable buffer.
 *
 * A nested message is opened with pb__begin(), which reserves one byte for its length and
 * remembers where; pb__end() patches the length in, moving the body when it needs more than
 * one byte (rare: most messages of a trace are under 128 bytes). Nothing is allocated per
 * field; the buffer grows by doubling and is reused after pb__reset().
 *
 * Errors are sticky: after an allocation failure every call is a no-op and pb__err() says
 * -ENOMEM, so an encoder can write a whole message and check once.
 */
#ifndef BPFSIGHT_PB_H
#define BPFSIGHT_PB_H

#include <stddef.h>
#include <linux/types.h>

#define PB_MAX_DEPTH 16

/* Wire types. */
#define PB_WT_VARINT 0
#define PB_WT_I64    1
#define PB_WT_LEN    2

struct pb {
	__u8 *buf;
	size_t len, cap;
	size_t open[PB_MAX_DEPTH]; /* offset of each open message's length byte */
	int depth;
	int err;
};

/* 0 or -ENOMEM. CAP is the initial capacity (0: a default). */
int pb__init(struct pb *pb, size_t cap);
void pb__free(struct pb *pb);
/* Forget the contents (and a sticky error), keep the memory. */
void pb__reset(struct pb *pb);
static inline int pb__err(const struct pb *pb)
{
	return pb->err;
}

/* Bytes a varint of V takes (1..10). */
int pb__varint_size(__u64 v);

/* Field FIELD of wire type varint: uint32/64, bool, enum; int32/int64 as two's complement. */
void pb__uint(struct pb *pb, __u32 field, __u64 v);
void pb__int(struct pb *pb, __u32 field, __s64 v);
/* sint32/sint64: zigzag-encoded. */
void pb__sint(struct pb *pb, __u32 field, __s64 v);
void pb__fixed64(struct pb *pb, __u32 field, __u64 v);
/* double: the IEEE-754 bits as fixed64. */
void pb__double(struct pb *pb, __u32 field, double v);
void pb__bytes(struct pb *pb, __u32 field, const void *data, size_t len);
/* A NUL-terminated string; NULL is written as "". */
void pb__string(struct pb *pb, __u32 field, const char *s);

/* Open a nested message (or a length-delimited field built piecewise), close it. */
void pb__begin(struct pb *pb, __u32 field);
void pb__end(struct pb *pb);

#endif /* BPFSIGHT_PB_H */
