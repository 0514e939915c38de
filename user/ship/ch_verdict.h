/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the verdict (verdict.h) finds in a pass over every record, as SQL over the rows the
 * server holds (`stats --from`'s verdict): the rows' span, the threads' names and lives, the
 * events per kind, and the per-record state the families' rules keep (struct
 * family_verdict.reads names them: osrt_thread_calls, ...), each an answer of stats' shape
 * (ch_reports.h). Never the events pulled back: one row per thread, or per thread and call.
 */
#ifndef BPFSIGHT_CH_VERDICT_H
#define BPFSIGHT_CH_VERDICT_H

#include "ch_reports.h"

/* The files' window: start, end (0: none), first and last records' times, wall-clock ns;
 * the families they recorded (comma-separated). */
extern const struct ch_report ch_verdict_span;
/* Each thread's names (pid, tid with the rank namespace; process, thread: NULL for none). */
extern const struct ch_report ch_verdict_names;
/* Each forked or exited thread's fork and exit times (0: not seen). */
extern const struct ch_report ch_verdict_lives;
/* The events per kind. */
extern const struct ch_report ch_verdict_kinds;
/* torch's input-bound rule's sums by thread and stack (ch_family_reports.c). */
extern const struct ch_report ch_torch_input_waits;
/* blas's rule's GEMMs per thread, with its process's library (ch_family_reports.c). */
extern const struct ch_report ch_blas_thread_gemms;
/* gpumetrics's rules' means and throttle times per device (ch_family_reports.c). */
extern const struct ch_report ch_gpum_devices;
/* mem's OOM and fragmentation rules' states per process and device (ch_mem_states.c). */
extern const struct ch_report ch_mem_ooms;
extern const struct ch_report ch_mem_devices;
/* cublas's low-MFU rule's GEMMs per process, step and type (ch_family_reports.c). */
extern const struct ch_report ch_cublas_step_gemms;
/*
 * The snapshots of the job's threads (ch_hang_states.c): a row per process (proc 1) and thread
 * read, a hang trigger's or an edge's, as snap_records.h has them; each thread's stack by what
 * it says (call, where) when it has one (stack 1). In the files' order.
 */
extern const struct ch_report ch_verdict_snaps;
/* The events lost while recording: family, cause, count (stats' warning above its reports). */
extern const struct ch_report ch_verdict_losses;
/* The hang's and the edges' rules' states (ch_hang_states.c), NULL-terminated. */
extern const struct ch_report *const ch_hang_states[];
/* cpu's fault rule's state per process (ch_cpu_reports.c). */
extern const struct ch_report ch_cpu_fault_procs;
/* A rule's state by its input's name (family_verdict.reads), or NULL. */
const struct ch_report *ch_verdict__state(const char *name);

#endif /* BPFSIGHT_CH_VERDICT_H */
