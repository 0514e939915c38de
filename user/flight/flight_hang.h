/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --trigger hang:DUR: a process of the job made no progress for DUR. What says progress:
 *   - calls: a call of a family that tells its calls in flight (struct family.in_flight: nccl's
 *     collectives, cuda's synchronizations) entered DUR ago and not left: a rank waiting in a
 *     collective for a rank that never came, a host waiting on a GPU that never finishes;
 *   - steps: a process that ended steps (struct family.progress: torch's steps, NVTX ranges)
 *     and has ended none for DUR;
 *   - ranks: two ranks or more (RANK in their environment) whose main threads have not run for
 *     DUR, every one of them: a job waiting in a collective on any backend (gloo, a store's
 *     barrier) for a rank blocked elsewhere, where no family sees a call in flight.
 * Nothing here runs per event but for the progress types' records (a table lookup by type):
 * the calls in flight are read every 100 ms from what BPF keeps anyway (the ucall programs'
 * per-thread call stacks), so the trigger costs the traced processes nothing.
 *
 * The driver looks (flight_hang__begin, a flight_hang__thread per thread and call the families
 * say, flight_hang__stalled); when a process stalled, it writes the calls in flight and a
 * snapshot of every thread of the job (snap_records.h) into the window and triggers the dump
 * (user/session/recorder_hang.c). A stall fires once: the same call still in flight, or the same
 * process still without a new step, does not fire again.
 */
#ifndef BPFSIGHT_FLIGHT_HANG_H
#define BPFSIGHT_FLIGHT_HANG_H

#include <stddef.h>
#include <linux/types.h>
#include "flight_opts.h"
#include "records.h"

struct flight_hang;

/* NULL when FO has no hang trigger (*ERR 0), or out of memory (*ERR -ENOMEM). */
struct flight_hang *flight_hang__new(const struct flight_opts *fo, int *err);
void flight_hang__free(struct flight_hang *h);
/* 1 when records of TYPE say progress or end a process (flight__observe hands those). */
int flight_hang__watches(const struct flight_hang *h, __u16 type);
/* A record of a watched type: a process moved on (a step ended), or exited. */
void flight_hang__observe(struct flight_hang *h, const struct bs_hdr *rec);
/* A look at the job now: the threads and calls the families say follow. */
void flight_hang__begin(struct flight_hang *h, __u64 now);
/* Thread TID of PID, in the call REC (BS_UCALL_OPEN; NULL: in none). */
void flight_hang__thread(struct flight_hang *h, __u32 pid, __u32 tid, const struct bs_hdr *rec);
/* Process PID, rank RANK of the job: its main thread's CPU time so far (ns), this look. */
void flight_hang__rank(struct flight_hang *h, __u32 pid, __s32 rank, __u64 cpu_ns);
/*
 * After the look: 1 when a process made no progress for DUR and that stall has not fired yet,
 * with WHY (e.g. "hang:3s: pid 42 tid 42 in ncclAllReduce for 3.1 s") and *PID, the process.
 */
int flight_hang__stalled(struct flight_hang *h, char *why, size_t len, __u32 *pid);

#endif /* BPFSIGHT_FLIGHT_HANG_H */
