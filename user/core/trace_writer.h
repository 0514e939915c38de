/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Crash-safe trace writer: records are encoded into an in-memory chunk, and a chunk reaches
 * the file only whole (header + complete zstd frame, one write). A recorder killed at any
 * moment leaves a file readable up to its last complete chunk.
 */
#ifndef BPFSIGHT_TRACE_WRITER_H
#define BPFSIGHT_TRACE_WRITER_H

#include <linux/types.h>
#include "records.h"
#include "trace_meta.h"

#define TRACE_WRITER_FORCE 0x1 /* replace an existing regular file */
/* Records from a file, not a recording (bpfsight convert): chunks of BS_CHUNK_TARGET_FILE. */
#define TRACE_WRITER_FROM_FILE 0x2

struct trace_writer;

/* A chunk as the writer made it: what its header says, for a sink and append_chunk. */
struct trace_chunk_info {
	__u32 seq, nrecords;
	__u64 first_ts, last_ts;
};
/*
 * Receives each closed chunk of an in-memory writer: CHUNK is the 48-byte chunk header and
 * its zstd frame, LEN bytes, valid only during the call. A negative errno fails the flush.
 */
typedef int (*trace_writer_sink_fn)(void *arg, const __u8 *chunk, size_t len,
				    const struct trace_chunk_info *info);

/*
 * Create PATH (mode 0600, O_NOFOLLOW, O_EXCL unless FORCE) and write the file header.
 * Returns NULL and sets *err to a negative errno on failure (-EEXIST: exists, no FORCE).
 */
struct trace_writer *trace_writer__open(const char *path, const struct trace_meta *meta,
					__u32 flags, int *err);
/*
 * A writer without a file (the flight recorder's window): chunks are made as by
 * trace_writer__open but handed to SINK. No header, footer or trailer: close just frees it.
 */
struct trace_writer *trace_writer__open_mem(trace_writer_sink_fn sink, void *arg, int *err);
/*
 * Write a whole chunk an in-memory writer made (after flushing what is open), renumbered
 * to this file's next seq and indexed in the footer.
 */
int trace_writer__append_chunk(struct trace_writer *w, const __u8 *chunk, size_t len,
			       const struct trace_chunk_info *info);
/*
 * Write the file header again from META, whose text is the one it was opened with (only
 * the start clocks may differ: record --start-at takes them when the recording starts).
 * -EINVAL when the header would change length. Nothing for an in-memory writer.
 */
int trace_writer__rewrite_header(struct trace_writer *w, const struct trace_meta *meta);
/* Seq of the chunk the next appended record goes into. */
__u32 trace_writer__seq(const struct trace_writer *w);
/* Append one record (rec->size bytes). Closes the chunk when it reaches its size target. */
int trace_writer__append(struct trace_writer *w, const struct bs_hdr *rec);
/* Close the current chunk if it holds records. */
int trace_writer__flush(struct trace_writer *w);
/* Close the current chunk if its first record was appended >= 1 s ago (CLOCK_MONOTONIC). */
int trace_writer__tick(struct trace_writer *w, __u64 now_mono_ns);
__u64 trace_writer__bytes(const struct trace_writer *w);   /* bytes in the file so far */
__u64 trace_writer__records(const struct trace_writer *w); /* records appended */
/* Records dropped with chunks that failed to write (neither in the file nor pending). */
__u64 trace_writer__dropped(const struct trace_writer *w);
/* Flush, write footer + trailer, fsync, close and free. END = clocks at close. */
int trace_writer__close(struct trace_writer *w, const struct trace_clocks *end);
/* Free without a footer (what a crash leaves). NULL is fine. */
void trace_writer__free(struct trace_writer *w);

#endif /* BPFSIGHT_TRACE_WRITER_H */
