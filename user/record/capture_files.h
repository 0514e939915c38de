/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file per --capture-range range (struct family_capture.files: the torch family's
 * steps:WAIT+NxREPEAT), as torch.profiler's tensorboard_trace_handler writes a trace per
 * active window: range k goes to OUTPUT's stem + -k.bst (out.bst: out-1.bst, out-2.bst, ...),
 * each a whole trace that every reading command takes alone. The job runs on between them.
 *
 * The recorder's writer (record_ctx.writer) is the current file. When range k closes
 * (capture_gate__on_close), the next file is opened at once (a header whose start is now,
 * then every record that names things, kept since the recording began: flight_meta's store,
 * as a flight-recorder dump begins), and becomes the writer; file k stays open CAPTURE_LATE_NS
 * longer for the events of range k that reach the recorder after its end (the cupti-shim
 * sends other threads' batches every 250 ms; the gate judges an event by its start):
 *   - an event the gate judges goes to the file of the range it started in: file k when its
 *     start is in range k; one of a range whose file is closed is counted, never written
 *     elsewhere (LOSS cause capture_late);
 *   - a record that names things (string, process, thread, symbol, stack, a family's
 *     state_records) goes to both files while two are open;
 *   - any other record the gate keeps whatever by its time too, but never refused: a stack's
 *     reference goes with its event, losses and cumulative totals (written now) to the
 *     current file.
 * The last range's file stays the writer until the recording ends; a recording that ends
 * before range k opened leaves file k with no events (said).
 */
#ifndef BPFSIGHT_CAPTURE_FILES_H
#define BPFSIGHT_CAPTURE_FILES_H

#include <linux/types.h>
#include "records.h"
#include "trace_meta.h"

/* How long a range's file stays open after the range closed, for its late events. */
#define CAPTURE_LATE_NS 1000000000ull

struct capture_files;
struct capture_gate;
struct trace_writer;

/*
 * NFILES ranges of OUTPUT (its stem + -k.bst); META the recording's header (kept by
 * pointer: it must outlive these), FLAGS trace_writer__open's. NULL on -ENOMEM.
 */
struct capture_files *capture_files__new(const char *output, const struct trace_meta *meta,
					 __u32 flags, __u32 nfiles,
					 const struct capture_gate *gate);
void capture_files__free(struct capture_files *cf);
/* File K's path (1-based), in BUF: snprintf's return. */
int capture_files__path_of(const struct capture_files *cf, __u32 k, char *buf, size_t len);
/* The current file's path (the one the recorder's writer writes). */
const char *capture_files__path(const struct capture_files *cf);
/*
 * Every record the recording writes, CUR its current writer: REC kept for the next files
 * when it names things, and written where it belongs. 0, a negative errno from a writer, or 1
 * when REC is an event of a range whose file is closed: not written, to be counted.
 */
int capture_files__append(struct capture_files *cf, struct trace_writer *cur,
			  const struct bs_hdr *rec);
/*
 * The range ending at END closed, CUR its file: the next one is opened and returned in *NEXT
 * (NULL after the last range: CUR stays the file); CUR then closes CAPTURE_LATE_NS later
 * (capture_files__tick). 0 or a negative errno (said).
 */
int capture_files__next(struct capture_files *cf, struct trace_writer *cur, __u64 end,
			struct trace_writer **next);
/* Close the previous range's file once its late events' time is over (NOW: CLOCK_MONOTONIC). */
int capture_files__tick(struct capture_files *cf, __u64 now);
/* The recording ends: close the previous range's file now, whatever its time. */
int capture_files__finish(struct capture_files *cf);
/* 1 when the current file's range opened (else the recording ended before it). */
int capture_files__current_opened(const struct capture_files *cf);

#endif /* BPFSIGHT_CAPTURE_FILES_H */
