/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Streaming trace reader. It trusts nothing: every length is checked before use, a chunk
 * that fails its checks is skipped (the reader resynchronizes on the next chunk magic), and
 * a file cut short yields every complete chunk before the cut.
 */
#ifndef BPFSIGHT_TRACE_READER_H
#define BPFSIGHT_TRACE_READER_H

#include <stdio.h>
#include <linux/types.h>
#include "records.h"
#include "trace_meta.h"

struct trace_reader;

struct trace_status {
	__u32 chunks;	      /* data chunks decoded */
	__u32 corrupt_chunks; /* chunks skipped because a check failed */
	__u64 skipped_bytes;  /* bytes passed over while resynchronizing */
	__u64 records;
	int clean_close; /* footer and trailer present and valid */
	int truncated;	 /* no valid trailer: the writer did not close the file */
	/* The pid of the recorder writing the file now (its lock), 0 when none: in progress. */
	__u32 writer_pid;
	int has_end; /* end clocks known (from the footer) */
	struct trace_clocks end;
	__u64 first_ts, last_ts; /* over records decoded */
};

/*
 * Open and validate the file header. On failure returns NULL and writes a one-line reason
 * into ERR (e.g. "not a bpfsight trace (bad magic)"), *errp = negative errno.
 */
struct trace_reader *trace_reader__open(const char *path, char *err, size_t errlen, int *errp);
/* Same over an open stream (the reader takes ownership and fcloses it). */
struct trace_reader *trace_reader__open_file(FILE *f, char *err, size_t errlen, int *errp);
const struct trace_meta *trace_reader__meta(const struct trace_reader *r);
/*
 * Next record in file order: 1 and *rec set (valid until the next call), 0 at the end.
 * Guarantees: size >= sizeof(struct bs_hdr), size % 8 == 0, type < BS_REC_TYPE_MAX.
 * Footer records are consumed internally, never returned.
 */
int trace_reader__next(struct trace_reader *r, const struct bs_hdr **rec);
/* Bytes of the file consumed so far (for progress displays); -1 if unknown. */
long long trace_reader__offset(const struct trace_reader *r);
/* Complete once next() has returned 0. */
const struct trace_status *trace_reader__status(const struct trace_reader *r);
void trace_reader__free(struct trace_reader *r);

#endif /* BPFSIGHT_TRACE_READER_H */
