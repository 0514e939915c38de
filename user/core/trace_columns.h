/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Column codec for the records of a chunk (chunk flag BS_CHUNK_COLUMNS, format version 2;
 * the per-thread codings, TRACE_COLUMNS_THREAD and _GAP, since version 3).
 * A record is seen as little-endian u32 fields. Each record type has ncols columns (at most
 * TRACE_COLUMNS_MAX): field j < ncols of each record of the type goes to column (type, j) as
 * one varint, the field itself (bit j of the type's rawmask) or zigzag32(field - field j of
 * the type's previous record that had one). With TRACE_COLUMNS_END in the type's flags,
 * fields 4 and 5 (hdr.ts) of its records of 32 bytes or more hold the halves of ts + the u64
 * at byte 24 (the interval's end, for records with a dur there, which are written in the
 * order they end). With TRACE_COLUMNS_THREAD, a column whose bit is set in threadmask holds
 * zigzag32(field - field j of the same thread's previous record of the type) instead; with
 * TRACE_COLUMNS_GAP, the u64 word gapword holds its value less the time since the end of the
 * same thread's previous record (trace_columns_thread.h); with TRACE_COLUMNS_CHAIN (and END),
 * fields 4 and 5 are deltas against fields 4 and 5 of the chunk's previous record of any type
 * with CHAIN: records are written as they end, so one chain of ends is shorter steps than
 * one per type, and the order of types is already in the type bytes. With TRACE_COLUMNS_PLANES,
 * a column whose bit is set in planemask is stored as 5 planes: plane k holds byte k of each
 * of its varints that has one, so that zstd codes the random low bytes of timestamps apart
 * from their few high bytes. The fields past ncols (string text, stack frames) go verbatim to
 * the type's tail. One varint per record says its type, in record order: its index in the
 * directory (format 4; in format 2 and 3, one byte per record, the type itself):
 *
 *   directory | types (nrecords varints) | per type, in directory order: its columns, its tail
 *   directory = varint(ntypes) | ntypes x (varint(type) | varint(flags) | varint(rawmask) |
 *                                          [varint(threadmask)] | [varint(gapword)] |
 *                                          [varint(key)] | [varint(planemask)] |
 *                                          varint(ncols) | ncols x varint(column bytes)
 *                                          (5 x, one per plane, for a column in planes) |
 *                                          varint(tail bytes))
 *
 * Why: a column holds one field of one kind of record, so a pid|tid word no longer mixes two
 * deltas, a timestamp's delta sits with other timestamps' deltas, text sits with text, and
 * zstd sees long runs of alike bytes; the encoder picks, per chunk and type, what codes each
 * column shortest. Field 0 is type | size << 16, so the record's length comes with its first
 * field. Delta state starts at zero in every chunk: a chunk still decodes on its own.
 */
#ifndef BPFSIGHT_TRACE_COLUMNS_H
#define BPFSIGHT_TRACE_COLUMNS_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

#define TRACE_COLUMNS_MAX     32   /* columns a record type has at most (its first 128 bytes) */
#define TRACE_COLUMNS_END     0x1  /* type flag: hdr.ts is coded as ts + the u64 at byte 24 */
#define TRACE_COLUMNS_THREAD  0x2  /* type flag: threadmask follows rawmask (version 3) */
#define TRACE_COLUMNS_GAP     0x4  /* type flag: gapword follows (version 3) */
#define TRACE_COLUMNS_CHAIN   0x8  /* type flag: ts or end against the chunk's chain (version 3) */
#define TRACE_COLUMNS_PLANES  0x10 /* type flag: planemask follows (version 3) */
#define TRACE_COLUMNS_FLAGS   0x1f /* the type flags a reader knows */
#define TRACE_COLUMNS_NPLANES 5	   /* a u32's varint has 5 bytes at most */
/*
 * The file version from which the types section holds each record's index in the directory
 * (a varint: types need not fit a byte), not its type (a byte).
 */
#define TRACE_COLUMNS_INDEX_VERSION 4

struct trace_columns_enc;
struct trace_columns_dec;

struct trace_columns_enc *trace_columns_enc__new(void);
void trace_columns_enc__free(struct trace_columns_enc *e);
/*
 * Add REC (REC->size bytes). Returns 0, -EINVAL for a record the format cannot hold (size
 * not a multiple of 8 in [24, 65528], type >= BS_REC_TYPE_MAX) or -ENOMEM.
 */
int trace_columns_enc__add(struct trace_columns_enc *e, const struct bs_hdr *rec);
/* Bytes of the chunk so far (columns, tails, type bytes; about a byte a field for the
 * records whose coding is not chosen yet): what the writer's chunk target counts. */
size_t trace_columns_enc__size(const struct trace_columns_enc *e);
/* Records added since the last reset. */
__u32 trace_columns_enc__records(const struct trace_columns_enc *e);
/*
 * Lay the chunk out in one buffer, owned by E and valid until the next reset (no add
 * between). Returns 0 and sets *OUT, *LEN, or -ENOMEM.
 */
int trace_columns_enc__finish(struct trace_columns_enc *e, const __u8 **out, size_t *len);
/* Forget the records and the delta state: call after each chunk. */
void trace_columns_enc__reset(struct trace_columns_enc *e);
/* Reset, and forget what the chunks before taught (which types are in the chain): as new,
 * with its memory kept (codec_bench encodes a trace again with it). */
void trace_columns_enc__restart(struct trace_columns_enc *e);

/* A decoder of chunks of this writer's format (TRACE_COLUMNS_INDEX_VERSION on). */
struct trace_columns_dec *trace_columns_dec__new(void);
/* Decode the chunks of a file of format VERSION (2 and 3: a type byte per record). */
void trace_columns_dec__version(struct trace_columns_dec *d, __u32 version);
void trace_columns_dec__free(struct trace_columns_dec *d);
/*
 * Start decoding the NRECORDS records of a chunk in IN[0..LEN), which must stay valid
 * while its records are decoded. Returns 0, or -EBADMSG when the directory is malformed or
 * its lengths do not add up to LEN.
 */
int trace_columns_dec__begin(struct trace_columns_dec *d, const __u8 *in, size_t len,
			     __u32 nrecords);
/*
 * Decode the next record into WORDS (room for TRACE_CODEC_MAX_WORDS, trace_codec.h) and set
 * *NWORDS. Returns 0, or -EBADMSG (no record left, a column or tail run dry, a bad varint, a
 * length or type word that disagrees with the record's type).
 */
int trace_columns_dec__next(struct trace_columns_dec *d, __u64 *words, __u32 *nwords);
/* After the last record: 0 when every column and tail was used up exactly, else -EBADMSG. */
int trace_columns_dec__end(const struct trace_columns_dec *d);

#endif /* BPFSIGHT_TRACE_COLUMNS_H */
