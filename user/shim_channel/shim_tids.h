/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Thread ids as a cupti-shim's process sees them, turned into the ids BPF records (and every
 * other record of the trace carries). A process in a pid namespace of its own (a container,
 * `unshare -fp`) knows its threads by that namespace's ids: CUPTI's API records and the
 * shim's NVTX records carry those, while the cuda family's calls carry the host's, so without
 * this no GPU op of a containerized job would find its launching call.
 *
 * The uprobe families' BPF writes each calling thread's pair at its first call (a THREAD_NS
 * record, shim_tids__told): exact however late the batch is unpacked. Threads that never
 * called (they named themselves or pushed NVTX ranges) come from /proc/PID/task/TID/status,
 * whose NSpid line gives a thread's id at every level from ours down to the process's own
 * (the last). It is read
 *   - once per thread the cuda family sees call in a namespaced process, as its call is
 *     drained: the thread is alive then, so a thread that launched work and exited before its
 *     shim's batch came (up to a flush period later) is still known;
 *   - for every thread of the process (/proc/PID/task) when a batch names an id not known,
 *     at most once per SHIM_TIDS_RESCAN_NS per process (threads that never called CUDA but
 *     named themselves or pushed NVTX ranges).
 * Not done in BPF: the batch's probe runs in the one thread that flushes, while a batch
 * carries the records of every thread, and recording the namespace id at every call would
 * cost every call for the few processes that need it.
 *
 * Bounds: the map of a process is freed at its exit (shim_tids__proc_exit), and started over
 * past SHIM_TIDS_MAX_THREADS threads (its live threads are found again); ids not found are
 * left as sent and counted (shim_tids__unknown), never silently.
 */
#ifndef BPFSIGHT_SHIM_TIDS_H
#define BPFSIGHT_SHIM_TIDS_H

#include <linux/types.h>

#define SHIM_TIDS_RESCAN_NS   100000000ull
#define SHIM_TIDS_MAX_THREADS 65536 /* ids kept per process; more start the map over */

struct shim_tids;

struct shim_tids *shim_tids__new(void);
void shim_tids__free(struct shim_tids *t);
/* 1 when PID lives in a pid namespace below ours (its ids need translating), else 0. */
int shim_tids__namespaced(struct shim_tids *t, __u32 pid);
/* BPF saw thread TID of PID make a call: learn its namespace id while it lives. */
void shim_tids__seen(struct shim_tids *t, __u32 pid, __u32 tid);
/*
 * BPF said (a THREAD_NS record) that thread TID of PID is NSTID in its namespace: PID is
 * namespaced, and the pair is known whether or not the thread still lives.
 */
void shim_tids__told(struct shim_tids *t, __u32 pid, __u32 tid, __u32 nstid);
/* BPF's id of the thread PID knows as NSTID; NSTID itself when not found (counted). */
__u32 shim_tids__host(struct shim_tids *t, __u32 pid, __u32 nstid, __u64 now);
/* PID exited: what was kept for it goes. */
void shim_tids__proc_exit(struct shim_tids *t, __u32 pid);
/* Processes kept now, and ids that could not be translated so far. */
__u64 shim_tids__procs(const struct shim_tids *t);
__u64 shim_tids__unknown(const struct shim_tids *t);

#endif /* BPFSIGHT_SHIM_TIDS_H */
