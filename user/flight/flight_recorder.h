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
 *   flight__trigger         SIGUSR1, or any reason from outside (the hang trigger: flight_hang.h,
 *                           looked at by the driver, which snapshots the job's threads first)
 *   flight__due + dump      each turn of the loop: when due, bring the in-kernel totals and
 *                           losses up to date (as for a flush), then flight__dump
 *   flight__tick            housekeeping (~10 times a second): the window slides
 *   flight__finish + free   at the end: a pending dump is written
 *
 *   record_ctx__write(rec) --> flight__observe: flight_meta (state records), flight_trigger
 *                      \--> trace_writer (in memory, trace_writer__open_mem)
 *                               | each closed chunk: header + zstd frame, as on disk
 *                               v
 *                       ring of chunks, oldest first  <-- flight__tick: slides by DUR, SIZE
 *   SIGUSR1, --trigger --> flight__trigger --(--trigger-after)--> flight__due --> flight__dump
 *
 * The window is compressed chunks: the same codec, chunk rules (1 MiB of records or 1 s) and
 * zstd frames as a file, each closed chunk copied into a ring. flight__tick drops the oldest
 * chunk once the next one alone reaches back DUR (so at least DUR is held), and before a new
 * chunk is stored, the oldest ones while chunks + metadata would exceed SIZE. A chunk SIZE
 * pushes out while still inside DUR is remembered (its last time, its record count), so a
 * dump says what its window lost (LOSS cause flight_size), never silently.
 *
 * The metadata the window needs (flight_meta.c): records that name things are written once,
 * when first needed, usually long before the window: strings, processes, thread names,
 * symbols, stacks, and a family's state_records (struct family). The store keeps the latest
 * copy of each, keyed by what it describes, with the seq of the chunk it went into; it also
 * sees STACK_REF and CPU_SAMPLE records (a stack's last use) and EXIT records. When the
 * oldest chunk goes, it forgets stacks no longer used and processes and threads that ended
 * before the new oldest chunk. A dump writes first the entries whose chunk is not part of the
 * window, their time set to the window's start, and of the stacks only those the window's
 * events use: the window's records then read as in the full recording.
 *
 * A dump (flight__dump) is a new file, opened like any trace (the recording's header with the
 * dump's keys in its options): the metadata, the loss, what the families say of their state at
 * the window's start (flight__set_prologue), then the window. The window's first
 * chunk usually begins before the window: it is decompressed and its records from the
 * window's start on (and its state records) appended again; every later chunk is copied still
 * compressed (trace_writer__append_chunk: renumbered, indexed in the footer). Then the footer
 * and fsync. The in-kernel totals and losses are brought up to date first, as for a SIGUSR1
 * flush. A dump is written synchronously by the recording loop; the ring pump keeps emptying
 * the ring meanwhile (the dump latency: bench/RESULTS.md, "Flight recorder").
 *
 * Triggers (flight_trigger.c): a table by record type says which conditions may match; only
 * those records are decoded, by the family's own decoder, so NAME is dump's name or kind, and
 * the duration its dur. A trigger while a dump waits for --trigger-after joins it (counted
 * coalesced); within --trigger-cooldown of the last dump, or past --max-dumps, it is counted
 * and ignored.
 *
 * Cumulative snapshots (flight_cumul.c): records that count since the recording began (a
 * family's cumulative types, struct family_cumulative) cannot be copied into a dump as they
 * are: flight__observe keeps them out of the chunks, per key in time order, with the last one
 * before the oldest chunk as the key's base; a dump writes those of its window after its
 * chunks, each less the base (docs/FORMAT.md, "Flight-recorder dumps"). A closing snapshot
 * ends its key.
 *
 * Memory: SIZE bounds chunks + metadata + cumulative snapshots. Besides, whatever SIZE and the
 * rate: the writer's open chunk and zstd's context, and while a dump is written its writer
 * and the cut first chunk (docs/PRODUCTION.md). The recorder's string pool and stack cache
 * are not the flight recorder's and grow as in any recording (with distinct names, not time).
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
 * Returns 1 when a dump will hold it (a new one, or the one on its way), 0 when ignored.
 */
int flight__trigger(struct flight_recorder *fr, const char *reason, int say);
/*
 * Whether a trigger now would be written (a new dump, or one on its way), not cooled down or
 * over --max-dumps: the hang trigger reads the job's threads only then.
 */
int flight__would_dump(const struct flight_recorder *fr);
/*
 * What the families write before a dump's window (the driver's: struct family.flight_prologue
 * of each): FN(ARG, the window's start, WRITE, W) appends with WRITE(W, rec).
 */
typedef int (*flight_prologue_fn)(void *arg, __u64 from_ts,
				  int (*write)(void *w, const struct bs_hdr *rec), void *w);
void flight__set_prologue(struct flight_recorder *fr, flight_prologue_fn fn, void *arg);
/*
 * REC (copied) goes into the next dump after its window, whatever its time, then is forgotten:
 * what a trigger saw that began before the window (a call in flight for longer than it). 0 or
 * -ENOMEM.
 */
int flight__add_to_dump(struct flight_recorder *fr, const struct bs_hdr *rec);
/* The hang trigger's watch (--trigger hang), or NULL. */
struct flight_hang;
struct flight_hang *flight__hang(struct flight_recorder *fr);
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
