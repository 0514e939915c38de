/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder (--flight-recorder): the last DUR of a recording kept in memory as
 * compressed chunks, bounded by SIZE, written only when something triggers it, as a whole
 * self-contained trace file per trigger (OUTPUT's stem + -N.bst). The recording goes on.
 *
 * What a recording loop calls (record, monitor):
 *   flight__new             before recording; its writer is the recording's writer
 *   flight__observe         every record, before it is appended (record_ctx__write does it);
 *                           when it returns 1 the record is kept by it, not appended
 *   flight__trigger         SIGUSR1, or any reason from outside
 *   flight__due + dump      each turn of the loop: when due, bring the in-kernel totals and
 *                           losses up to date (as for a flush), then flight__dump
 *   flight__tick            housekeeping (~10 times a second): the window slides
 *   flight__finish + free   at the end: a pending dump is written
 */
#ifndef BPFSIGHT_FLIGHT_RECORDER_H
#define BPFSIGHT_FLIGHT_RECORDER_H

#include <linux/types.h>
#include "flight_opts.h"
#include "records.h"
#include "trace_meta.h"

struct flight_recorder;
struct trace_writer;

/*
 * OUTPUT names the dumps (its stem + -N.bst, replaced when FORCE); META is the recording's
 * header, repeated in each dump with the dump's own options appended (kept by pointer: it
 * must outlive the recorder). NULL and *err on failure.
 */
struct flight_recorder *flight__new(const struct flight_opts *fo, const struct trace_meta *meta,
				    const char *output, int force, int *err);
/* The in-memory writer the recording appends to (owned by the flight recorder). */
struct trace_writer *flight__writer(struct flight_recorder *fr);
/*
 * Every record, before it is appended: keeps state records, evaluates --trigger. Returns 1
 * for a cumulative snapshot, which it keeps itself (the caller does not append it), else 0.
 */
int flight__observe(struct flight_recorder *fr, const struct bs_hdr *rec);
/*
 * Ask for a dump (REASON says why, e.g. "SIGUSR1"): may be coalesced, cooled down, capped.
 * SAY: a person asked (a signal): a trigger that makes no dump of its own says so, each time;
 * --trigger's, which may come by the thousand, are only counted (and said at the end).
 */
void flight__trigger(struct flight_recorder *fr, const char *reason, int say);
/* 1 when a triggered dump is to be written now (its --trigger-after is over). */
int flight__due(const struct flight_recorder *fr, __u64 now_ns);
/* Write the pending dump. Returns 0 or a negative errno (the recording goes on anyway). */
int flight__dump(struct flight_recorder *fr);
/* The window slides: chunks older than DUR or over SIZE go, the metadata with them. */
void flight__tick(struct flight_recorder *fr, __u64 now_ns);
/* Bytes held now: chunks and metadata (the SIZE budget). */
__u64 flight__bytes(const struct flight_recorder *fr);
/* The recording ends: write a pending dump, print what the flight recorder did. */
/* PUMP_PEAK: the most the ring pump held at once (its end line says the memory it took). */
void flight__finish(struct flight_recorder *fr, size_t pump_peak);
/* Dumps that could not be written (said when they failed): the recording failed. */
__u32 flight__failed(const struct flight_recorder *fr);
void flight__free(struct flight_recorder *fr);

#endif /* BPFSIGHT_FLIGHT_RECORDER_H */
