/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A read cursor over untrusted DWARF call-frame bytes (eh_frame.c, cfi_rows.c): every read is
 * checked against the end of the bytes it may use; a read that would pass it sets the
 * cursor's error and returns 0, and every later read fails too, so a caller may read a whole
 * record and check the error once.
 */
#ifndef BPFSIGHT_CFI_CURSOR_H
#define BPFSIGHT_CFI_CURSOR_H

#include <linux/types.h>
#include <stddef.h>
#include <string.h>

struct cfi_cursor {
	const __u8 *p, *end;
	int bad; /* a read passed the end, or a LEB128 was longer than 64 bits */
};

static inline size_t cfi_left(const struct cfi_cursor *c)
{
	return c->bad ? 0 : (size_t)(c->end - c->p);
}

static inline int cfi_take(struct cfi_cursor *c, void *out, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		memset(out, 0, n);
		return -1;
	}
	memcpy(out, c->p, n);
	c->p += n;
	return 0;
}

/* A little-endian value of N (1, 2, 4 or 8) bytes. */
static inline __u64 cfi_fixed(struct cfi_cursor *c, size_t n)
{
	__u8 b[8];
	__u64 v = 0;

	if (cfi_take(c, b, n))
		return 0;
	while (n--)
		v = v << 8 | b[n];
	return v;
}

static inline __u8 cfi_u8(struct cfi_cursor *c)
{
	return (__u8)cfi_fixed(c, 1);
}

static inline __u16 cfi_u16(struct cfi_cursor *c)
{
	return (__u16)cfi_fixed(c, 2);
}

static inline __u32 cfi_u32(struct cfi_cursor *c)
{
	return (__u32)cfi_fixed(c, 4);
}

static inline __u64 cfi_u64(struct cfi_cursor *c)
{
	return cfi_fixed(c, 8);
}

/* A LEB128 number, sign-extended when SIGNED; more bits than 64 hold is an error. */
static inline __u64 cfi_leb(struct cfi_cursor *c, int is_signed)
{
	__u64 v = 0;
	unsigned int shift = 0;
	__u8 b;

	do {
		b = cfi_u8(c);
		/* past 64 bits only the sign's copies may come */
		if (shift >= 64 && (b & 0x7f) && (!is_signed || (b & 0x7f) != 0x7f)) {
			c->bad = 1;
			return 0;
		}
		if (shift < 64)
			v |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad);
	if (c->bad)
		return 0;
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

static inline __u64 cfi_uleb(struct cfi_cursor *c)
{
	return cfi_leb(c, 0);
}

static inline __s64 cfi_sleb(struct cfi_cursor *c)
{
	return (__s64)cfi_leb(c, 1);
}

/* Skip N bytes (a block, augmentation data). */
static inline void cfi_skip(struct cfi_cursor *c, __u64 n)
{
	if (c->bad || (__u64)(c->end - c->p) < n)
		c->bad = 1;
	else
		c->p += n;
}

#endif /* BPFSIGHT_CFI_CURSOR_H */
