/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records of one decompressed chunk, whichever encoding its flags say: the varint codec
 * of format 1 (trace_codec.h) or the column codec (trace_columns.h, BS_CHUNK_COLUMNS).
 */
#ifndef BPFSIGHT_TRACE_CHUNK_DEC_H
#define BPFSIGHT_TRACE_CHUNK_DEC_H

#include <stddef.h>
#include <linux/types.h>

struct trace_chunk_dec;

/* A decoder of this writer's chunks (format BS_FILE_VERSION). */
struct trace_chunk_dec *trace_chunk_dec__new(void);
/* Decode the chunks of a file of format VERSION instead. */
void trace_chunk_dec__version(struct trace_chunk_dec *d, __u32 version);
void trace_chunk_dec__free(struct trace_chunk_dec *d);
/* Start on the NRECORDS records in RAW[0..LEN) (kept by the caller): 0 or -EBADMSG. */
int trace_chunk_dec__begin(struct trace_chunk_dec *d, __u32 flags, const __u8 *raw, size_t len,
			   __u32 nrecords);
/* Next record into WORDS (TRACE_CODEC_MAX_WORDS): 0, -EBADMSG or -ENOMEM. */
int trace_chunk_dec__next(struct trace_chunk_dec *d, __u64 *words, __u32 *nwords);
/* After NRECORDS records: 0 when they used the chunk's bytes exactly, else -EBADMSG. */
int trace_chunk_dec__end(const struct trace_chunk_dec *d);

#endif /* BPFSIGHT_TRACE_CHUNK_DEC_H */
