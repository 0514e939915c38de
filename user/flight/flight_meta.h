/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder's metadata store: the latest copy of every record that later events
 * need to be read (strings, process and thread names, symbols, stacks, a family's state
 * records), so a dump of the last window still names what its events refer to, although
 * those records were written long before the window.
 */
#ifndef BPFSIGHT_FLIGHT_META_H
#define BPFSIGHT_FLIGHT_META_H

#include <linux/types.h>
#include "records.h"

struct flight_meta;
struct trace_writer;

struct flight_meta *flight_meta__new(void);
void flight_meta__free(struct flight_meta *fm);
/*
 * See REC, which goes into chunk SEQ of the window: keep it when it is a state record,
 * note the stacks it refers to and the processes and threads that end. -ENOMEM or 0.
 */
int flight_meta__observe(struct flight_meta *fm, const struct bs_hdr *rec, __u32 seq);
/* 1 when records of TYPE are kept (a dump never cuts them out of its first chunk). */
int flight_meta__is_state(const struct flight_meta *fm, __u16 type);
/*
 * Forget what no event at or after OLDEST_TS can need: stacks last referred to before it,
 * processes and threads that ended before it. Bounded work: runs when told to.
 */
void flight_meta__prune(struct flight_meta *fm, __u64 oldest_ts);
/*
 * Append to W the kept records that the window [FROM_TS, ...) needs and that are not in
 * its chunks (they went into a chunk before FIRST_SEQ), with ts = FROM_TS. Returns the
 * number appended or a negative errno.
 */
long flight_meta__write(struct flight_meta *fm, struct trace_writer *w, __u64 from_ts,
			__u32 first_seq);
/*
 * Append to W every kept record, with ts = TS: what a new file of a recording already
 * under way needs before its events (a file per --capture-range range: capture_files.h).
 */
long flight_meta__write_all(struct flight_meta *fm, struct trace_writer *w, __u64 ts);
/* Bytes held (records and index), for the SIZE budget. */
__u64 flight_meta__bytes(const struct flight_meta *fm);
__u64 flight_meta__count(const struct flight_meta *fm);

#endif /* BPFSIGHT_FLIGHT_META_H */
