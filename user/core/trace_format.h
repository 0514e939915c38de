/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * On-disk layout of a .bst trace file, version 4 (readers also read versions 1 to 3).
 * docs/FORMAT.md is the prose version of this header; keep them together.
 *
 *   file header   "BPFSIGHT" | u32 version | u32 meta_len | meta TLVs | u32 crc32
 *   chunk*        struct bs_chunk_hdr | one zstd frame (content checksum on)
 *   footer chunk  a chunk with BS_CHUNK_FOOTER set (clean close only)
 *   trailer       u64 footer offset | "BSTRAILR"
 *
 * Inside a chunk, records are in columns (BS_CHUNK_COLUMNS, trace_columns.h; data chunks
 * since version 2, with per-thread codings since version 3) or varint-delta encoded 64-bit
 * words (trace_codec.h: version 1, and the footer chunk); the delta state resets at every
 * chunk, so each chunk decodes on its own.
 * All integers are little-endian.
 */
#ifndef BPFSIGHT_TRACE_FORMAT_H
#define BPFSIGHT_TRACE_FORMAT_H

#include <linux/types.h>

#define BS_FILE_MAGIC	     "BPFSIGHT" /* 8 bytes, no NUL */
#define BS_FILE_VERSION	     4
#define BS_FILE_VERSION_MIN  1 /* the oldest version a reader still reads */
#define BS_TRAILER_MAGIC     "BSTRAILR"
#define BS_CHUNK_MAGIC	     0x4b435342u /* "BSCK" */
#define BS_CHUNK_FOOTER	     0x1u
#define BS_CHUNK_COLUMNS     0x2u /* records in columns (trace_columns.h), else varint words */
#define BS_CHUNK_TARGET_RAW  (1u << 20)	   /* close a chunk at ~1 MiB of encoded records... */
#define BS_CHUNK_TARGET_FILE (2u << 20)	   /* ...2 MiB when rewriting a file (convert) */
#define BS_CHUNK_TARGET_NS   1000000000ull /* ...or 1 s after its first record */
#define BS_CHUNK_MAX_RAW     (64u << 20)   /* a reader refuses bigger chunks */
#define BS_META_MAX	     (1u << 20)	   /* a reader refuses a bigger file header */

/* Keys of the file header's TLVs: u16 key, u16 zero, u32 len, len bytes (no padding). */
#define BS_META_HOSTNAME 1  /* text */
#define BS_META_KERNEL	 2  /* text: uname release + version */
#define BS_META_BOOT_ID	 3  /* text: /proc/sys/kernel/random/boot_id */
#define BS_META_CMDLINE	 4  /* text: bpfsight's own command line */
#define BS_META_FAMILIES 5  /* text: comma-separated families recorded */
#define BS_META_TARGET	 6  /* text: "launch: CMD", "pid: 1,2" or "system-wide" */
#define BS_META_CLOCKS	 7  /* 3 x u64: MONOTONIC, REALTIME, BOOTTIME ns at start */
#define BS_META_VERSION	 8  /* text: bpfsight version */
#define BS_META_OPTIONS	 9  /* text: recording options, "key=value" separated by spaces */
#define BS_META_GPUS	 10 /* text: the NVIDIA GPUs, a line "BUS MODEL" each (nv_gpus.h) */

struct bs_chunk_hdr {
	__u32 magic;
	__u32 flags;
	__u32 seq; /* 0, 1, 2... in file order */
	__u32 nrecords;
	__u32 comp_len; /* bytes of the zstd frame that follows */
	__u32 raw_len;	/* bytes of encoded records inside it */
	__u64 first_ts; /* min and max hdr.ts of its records */
	__u64 last_ts;
	__u32 data_crc; /* crc32 (zlib) of the zstd frame */
	__u32 hdr_crc;	/* crc32 (zlib) of the 44 bytes before this field */
};
_Static_assert(sizeof(struct bs_chunk_hdr) == 48, "chunk header is part of the format");

/* Records only the footer chunk holds. */
#define BS_REC_FOOTER	   0xf0 /* struct bs_footer */
#define BS_REC_CHUNK_INDEX 0xf1 /* struct bs_chunk_index, one per data chunk */

struct bs_footer {
	__u16 type;
	__u16 size;
	__u32 nchunks;
	__u64 nrecords;
	__u64 mono_ns; /* clocks at close */
	__u64 realtime_ns;
	__u64 boottime_ns;
};
_Static_assert(sizeof(struct bs_footer) == 40, "footer is part of the format");

struct bs_chunk_index {
	__u16 type;
	__u16 size;
	__u32 seq;
	__u64 offset; /* file offset of the chunk header */
	__u64 first_ts;
	__u64 last_ts;
};
_Static_assert(sizeof(struct bs_chunk_index) == 32, "chunk index is part of the format");

#endif /* BPFSIGHT_TRACE_FORMAT_H */
