// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Minimal protobuf encoder; see pb.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pb.h"

#define PB_DEFAULT_CAP (64 * 1024)

int pb__init(struct pb *pb, size_t cap)
{
	memset(pb, 0, sizeof(*pb));
	pb->cap = cap ? cap : PB_DEFAULT_CAP;
	pb->buf = malloc(pb->cap);
	if (!pb->buf) {
		pb->cap = 0;
		pb->err = -ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

void pb__free(struct pb *pb)
{
	if (!pb)
		return;
	free(pb->buf);
	memset(pb, 0, sizeof(*pb));
}

void pb__reset(struct pb *pb)
{
	pb->len = 0;
	pb->depth = 0;
	pb->err = pb->buf ? 0 : -ENOMEM;
}

/* Room for N more bytes; 0, or -ENOMEM (sticky). */
static int pb__reserve(struct pb *pb, size_t n)
{
	size_t ncap;
	__u8 *nbuf;

	if (pb->err)
		return pb->err;
	if (pb->len + n <= pb->cap)
		return 0;
	ncap = pb->cap ? pb->cap : PB_DEFAULT_CAP;
	while (ncap < pb->len + n)
		ncap *= 2;
	nbuf = realloc(pb->buf, ncap);
	if (!nbuf) {
		pb->err = -ENOMEM;
		return pb->err;
	}
	pb->buf = nbuf;
	pb->cap = ncap;
	return 0;
}

int pb__varint_size(__u64 v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Caller reserved 10 bytes. */
static inline void pb__put_varint(struct pb *pb, __u64 v)
{
	__u8 *p = pb->buf + pb->len;

	while (v >= 0x80) {
		*p++ = (__u8)v | 0x80;
		v >>= 7;
	}
	*p++ = (__u8)v;
	pb->len = p - pb->buf;
}

static inline void pb__put_tag(struct pb *pb, __u32 field, __u32 wt)
{
	pb__put_varint(pb, (__u64)field << 3 | wt);
}

void pb__uint(struct pb *pb, __u32 field, __u64 v)
{
	if (pb__reserve(pb, 20))
		return;
	pb__put_tag(pb, field, PB_WT_VARINT);
	pb__put_varint(pb, v);
}

void pb__int(struct pb *pb, __u32 field, __s64 v)
{
	/* int32 and int64 alike: a negative value is sign-extended to 64 bits, 10 bytes. */
	pb__uint(pb, field, (__u64)v);
}

void pb__sint(struct pb *pb, __u32 field, __s64 v)
{
	pb__uint(pb, field, ((__u64)v << 1) ^ (__u64)(v >> 63));
}

void pb__fixed64(struct pb *pb, __u32 field, __u64 v)
{
	int i;

	if (pb__reserve(pb, 18))
		return;
	pb__put_tag(pb, field, PB_WT_I64);
	for (i = 0; i < 8; i++)
		pb->buf[pb->len++] = (__u8)(v >> (8 * i));
}

void pb__double(struct pb *pb, __u32 field, double v)
{
	__u64 bits;

	memcpy(&bits, &v, sizeof(bits));
	pb__fixed64(pb, field, bits);
}

void pb__bytes(struct pb *pb, __u32 field, const void *data, size_t len)
{
	if (pb__reserve(pb, 20 + len))
		return;
	pb__put_tag(pb, field, PB_WT_LEN);
	pb__put_varint(pb, len);
	if (len)
		memcpy(pb->buf + pb->len, data, len);
	pb->len += len;
}

void pb__string(struct pb *pb, __u32 field, const char *s)
{
	pb__bytes(pb, field, s ? s : "", s ? strlen(s) : 0);
}

void pb__begin(struct pb *pb, __u32 field)
{
	if (pb->depth >= PB_MAX_DEPTH) {
		/* A programming error, not data: fail the whole message rather than corrupt it. */
		pb->err = -E2BIG;
		return;
	}
	if (pb__reserve(pb, 11))
		return;
	pb__put_tag(pb, field, PB_WT_LEN);
	pb->open[pb->depth++] = pb->len;
	pb->buf[pb->len++] = 0; /* length placeholder: one byte, enough below 128 */
}

void pb__end(struct pb *pb)
{
	size_t at, body;
	int n;

	if (pb->err)
		return;
	if (pb->depth <= 0) {
		pb->err = -EINVAL;
		return;
	}
	at = pb->open[--pb->depth];
	body = pb->len - at - 1;
	if (body < 0x80) {
		pb->buf[at] = (__u8)body;
		return;
	}
	n = pb__varint_size(body);
	if (pb__reserve(pb, n - 1))
		return;
	memmove(pb->buf + at + n, pb->buf + at + 1, body);
	pb->len = at;
	pb__put_varint(pb, body);
	pb->len += body;
}
