/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unpacking the cupti-shim's batches (BS_REC_SHIM_BATCH ring records) into trace records.
 *
 * A batch is checked whole before anything in it is used: magic, version, lengths, and every
 * record's size and type against the types a shim may send. A batch that fails is dropped
 * and its records counted lost (BS_LOSS_SHIM), never trusted in part. Each record inside
 * then gets the pid BPF saw (the shim's getpid() can be a namespace's), the thread ids BPF
 * knows its threads by (shim_tids.h: a process in its own pid namespace), cpu 0, and the
 * file's string ids for the shim's (the shim interns per process: STRING records precede
 * their users; kernel names are demangled on the way). GPU records go through the launch
 * join (shim_join.h); NVTX ranges drive --capture-range=nvtx:NAME.
 *
 * Losses (docs/FORMAT.md): a STATUS record's dropped count (the shim's or CUPTI's full
 * buffers), the records of a batch BPF could not read (FAULT) or that failed the checks,
 * and holes in a process's batch sequence numbers that BPF's own count (ring full, the
 * shim_gaps map) does not explain: those count one per missing batch. Sequence numbers
 * may arrive out of order (two threads flushing at once): a hole counts once it is 64
 * batches old, or when the process exits or the recording ends.
 *
 * Bounds: what is kept per process (its strings, sequence window, the join's history and
 * correlation table, its namespace's thread ids) is freed at its exit record, or, should that
 * record be lost, when a sweep every few seconds finds the process gone. So only live
 * processes count against UNPACK_MAX_PROCS (past it, their batches are dropped and counted
 * lost) and UNPACK_MAX_STRING_BYTES of string text (past it, records are written with their
 * names unresolved, counted); both are warned about.
 */
#ifndef BPFSIGHT_SHIM_UNPACK_H
#define BPFSIGHT_SHIM_UNPACK_H

#include <linux/types.h>
#include "records.h"

#define UNPACK_MAX_PROCS	4096
#define UNPACK_MAX_STRING_BYTES (64u << 20)

#define SHIM_WANT_GPU	       0x1  /* gpu family: GPU_* records */
#define SHIM_WANT_NVTX	       0x2  /* nvtx family: NVTX_* records */
#define SHIM_WANT_TORCH	       0x8  /* torch family: TORCH_* records (0x4 is shim_link.c's sync) */
#define SHIM_WANT_TORCH_SHAPES 0x10 /* ... with input shapes */

#define SHIM_PROC_SENT	  0x1 /* a batch arrived in this recording */
#define SHIM_PROC_DRAINED 0x2 /* STATUS EV_DRAINED (or EV_EXIT) arrived */

struct shim_proc {
	__u32 pid;
	__u32 flags; /* SHIM_PROC_* */
	__u32 state; /* the last STATUS's BS_SHIM_ST_* bits */
	__u32 cupti_version;
	__u64 batches, records;
	/* batch sequence: seqs below base are settled; bit i of window = base + i arrived */
	__u64 base, window;
	__u64 gaps_used; /* BPF's shim_gaps count already used to explain holes */
};

struct record_ctx;
struct shim_unpack;

struct shim_unpack *shim_unpack__new(struct record_ctx *ctx, __u32 want, int gaps_fd);
/* Also unpack WANT's records from now on (a second family joined). */
void shim_unpack__want(struct shim_unpack *u, __u32 want);
/*
 * No batch will come any more: write the GPU records still waiting for their API record
 * (unlinked), count the sequence holes left, and say on stderr what was lost.
 */
void shim_unpack__finish(struct shim_unpack *u);
void shim_unpack__free(struct shim_unpack *u);
/*
 * Every ring-buffer record: a SHIM_BATCH is unpacked and consumed (returns 1); cuda calls
 * feed the launch join, EXEC and EXIT records reset or settle a process (returns 0).
 */
int shim_unpack__record(struct shim_unpack *u, const struct bs_hdr *rec);
/* Housekeeping: GPU records that waited too long for their API record are written. */
void shim_unpack__tick(struct shim_unpack *u, __u64 now);
/* The process PID if it was heard from, else NULL. */
const struct shim_proc *shim_unpack__proc(const struct shim_unpack *u, __u32 pid);
/* Iterate the processes heard from: *it = 0 first; NULL at the end. */
const struct shim_proc *shim_unpack__next(const struct shim_unpack *u, size_t *it);
/*
 * FN(ARG, REC, TEXT) sees every torch record and every STATUS record, its string ids the
 * file's, just before it is judged by the capture gate and written: it may open or close the
 * gate (the torch family's --capture-range=steps). TEXT is the op's name or the status's
 * detail ("" when none). One listener; NULL FN removes it.
 */
typedef void (*shim_unpack_fn)(void *arg, const struct bs_hdr *rec, const char *text);
void shim_unpack__listen(struct shim_unpack *u, shim_unpack_fn fn, void *arg);
/* FN(ARG, PID) when the shim of PID says a session began for this recording (ATTACH, JOIN). */
void shim_unpack__on_answer(struct shim_unpack *u, void (*fn)(void *arg, __u32 pid), void *arg);

#endif /* BPFSIGHT_SHIM_UNPACK_H */
