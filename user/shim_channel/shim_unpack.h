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
 * their users; names a family marks are demangled on the way: kernels'). Each record then
 * goes to its family's hooks (struct family_shim, shim_family.h: the gpu family's launch
 * join, the nvtx family's capture ranges), which let the channel write it or take it.
 *
 * Losses (docs/FORMAT.md): a STATUS record's dropped count (the shim's or CUPTI's full
 * buffers), the records of a batch BPF could not read (FAULT) or that failed the checks,
 * and holes in a process's batch sequence numbers that BPF's own count (ring full, the
 * shim_gaps map) does not explain: those count one per missing batch. Sequence numbers
 * may arrive out of order (two threads flushing at once): a hole counts once it is 64
 * batches old, or when the process exits or the recording ends.
 *
 * Bounds: what is kept per process (its strings, sequence window, what the families' hooks
 * keep of it, its namespace's thread ids) is freed at its exit record, or, should that record
 * be lost, when a sweep every few seconds finds the process gone. So only live
 * processes count against UNPACK_MAX_PROCS (past it, their batches are dropped and counted
 * lost) and UNPACK_MAX_STRING_BYTES of string text (past it, records are written with their
 * names unresolved, counted); both are warned about.
 */
#ifndef BPFSIGHT_SHIM_UNPACK_H
#define BPFSIGHT_SHIM_UNPACK_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

#define UNPACK_MAX_PROCS	4096
#define UNPACK_MAX_STRING_BYTES (64u << 20)

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

struct family;
struct record_ctx;
struct shim_unpack;

struct shim_unpack *shim_unpack__new(struct record_ctx *ctx, int gaps_fd);
/*
 * Unpack F's records from now on (a shim family attached): its hooks' state is made now.
 * 0, or -ENOMEM.
 */
int shim_unpack__want(struct shim_unpack *u, const struct family *f);
/*
 * No batch will come any more: the families finish (the GPU records still waiting for their
 * API record written, unlinked), the sequence holes left are counted, and stderr says what
 * was lost.
 */
void shim_unpack__finish(struct shim_unpack *u);
void shim_unpack__free(struct shim_unpack *u);
/*
 * Every ring-buffer record: a SHIM_BATCH is unpacked and consumed (returns 1); the families'
 * ring hooks see the types they asked for (cuda calls), EXEC and EXIT records reset or settle
 * a process (returns 0).
 */
int shim_unpack__record(struct shim_unpack *u, const struct bs_hdr *rec);
/* Housekeeping: the families' ticks (records that waited too long written), exits swept. */
void shim_unpack__tick(struct shim_unpack *u, __u64 now);
/* The process PID if it was heard from, else NULL. */
const struct shim_proc *shim_unpack__proc(const struct shim_unpack *u, __u32 pid);
/* Iterate the processes heard from: *it = 0 first; NULL at the end. */
const struct shim_proc *shim_unpack__next(const struct shim_unpack *u, size_t *it);
/*
 * FN(ARG, REC, TEXT) sees every record of F the channel writes and every STATUS record, its
 * string ids the file's, just before it is judged by the capture gate and written: it may
 * open or close the gate (the torch family's --capture-range=steps). TEXT is the text of the
 * record's first string (an op's name) or the status's detail ("" when none). One listener
 * per family; NULL FN removes it.
 */
typedef void (*shim_unpack_fn)(void *arg, const struct bs_hdr *rec, const char *text);
void shim_unpack__listen(struct shim_unpack *u, const struct family *f, shim_unpack_fn fn,
			 void *arg);
/* FN(ARG, PID) when the shim of PID says a session began for this recording (ATTACH, JOIN). */
void shim_unpack__on_answer(struct shim_unpack *u, void (*fn)(void *arg, __u32 pid), void *arg);

/* ---- for the families' hooks (struct family_shim) ---- */

/* The recording. */
struct record_ctx *shim_unpack__ctx(const struct shim_unpack *u);
/*
 * Write REC (a family's record its hook took), judged by the capture gate as if at GATE_TS
 * (GPU work belongs to the range of the call that launched it).
 */
void shim_unpack__emit(struct shim_unpack *u, struct bs_hdr *rec, __u64 gate_ts);
/* The host's id of the thread PID's shim named TID (a process in a pid namespace of its own). */
__u32 shim_unpack__host_tid(struct shim_unpack *u, __u32 pid, __u32 tid);
/* BPF saw thread TID of PID call: its namespace id is learnt while it lives (shim_tids.h). */
void shim_unpack__tid_seen(struct shim_unpack *u, __u32 pid, __u32 tid);

#endif /* BPFSIGHT_SHIM_UNPACK_H */
