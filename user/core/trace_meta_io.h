/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Private to the trace writer and reader: struct trace_meta <-> file header TLVs. */
#ifndef BPFSIGHT_TRACE_META_IO_H
#define BPFSIGHT_TRACE_META_IO_H

#include <stddef.h>
#include <linux/types.h>
#include "trace_meta.h"

#define BS_FILE_HDR_FIXED 16 /* magic, version, meta_len; the TLVs and a crc32 follow */

static inline void put_le16(__u8 *p, __u16 v)
{
	p[0] = (__u8)v;
	p[1] = (__u8)(v >> 8);
}

static inline void put_le32(__u8 *p, __u32 v)
{
	put_le16(p, (__u16)v);
	put_le16(p + 2, (__u16)(v >> 16));
}

static inline void put_le64(__u8 *p, __u64 v)
{
	put_le32(p, (__u32)v);
	put_le32(p + 4, (__u32)(v >> 32));
}

static inline __u16 get_le16(const __u8 *p)
{
	return (__u16)(p[0] | p[1] << 8);
}

static inline __u32 get_le32(const __u8 *p)
{
	return get_le16(p) | (__u32)get_le16(p + 2) << 16;
}

static inline __u64 get_le64(const __u8 *p)
{
	return get_le32(p) | (__u64)get_le32(p + 4) << 32;
}

/*
 * Build the whole file header (magic to crc) for META into a malloc'd *BUF of *LEN bytes.
 * NULL and "" strings are left out. Returns 0 or a negative errno.
 */
int trace_meta__encode_header(const struct trace_meta *meta, __u8 **buf, size_t *len);

/*
 * Parse the TLVs of a file header (BUF = the META_LEN bytes after the fixed part) into META,
 * which must start zeroed. Unknown keys are skipped. Returns 0, or -EBADMSG with a reason in
 * ERR, or -ENOMEM.
 */
int trace_meta__decode_tlvs(struct trace_meta *meta, const __u8 *buf, size_t len, char *err,
			    size_t errlen);

/* Free the strings META owns and zero it. */
void trace_meta__clear(struct trace_meta *meta);

#endif /* BPFSIGHT_TRACE_META_IO_H */
