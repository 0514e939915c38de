/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a reader learns while walking a trace: interned strings and the names of processes
 * and threads, from STRING, PROCESS, THREAD, FORK, EXEC and COMM records (a name the
 * application gave a thread, Python's THREAD_NAME or nvtxNameOsThread's NVTX_NAME, wins over
 * its comm), and the names of code addresses and handles from SYMBOL records, call stacks
 * from STACK records. Feed it every record in file order before decoding that record.
 */
#ifndef BPFSIGHT_TRACE_MODEL_H
#define BPFSIGHT_TRACE_MODEL_H

#include <linux/types.h>
#include "records.h"

struct trace_model;

struct trace_model *trace_model__new(void);
void trace_model__free(struct trace_model *m);
void trace_model__observe(struct trace_model *m, const struct bs_hdr *rec);
/*
 * The recording's start, CLOCK_MONOTONIC ns (the file header's start clocks; trace_walk sets
 * it): reports give times from it, as the exports' timelines start there. 0: unknown.
 */
void trace_model__set_start(struct trace_model *m, __u64 mono_ns);
__u64 trace_model__start(const struct trace_model *m);
/* The recording's end (its footer's clock), set when the walk has read the whole file; 0 before,
 * and for a file without a footer. */
void trace_model__set_end(struct trace_model *m, __u64 mono_ns);
__u64 trace_model__end(const struct trace_model *m);
/* NULL when unknown. Results stay valid until trace_model__free. */
const char *trace_model__string(const struct trace_model *m, __u32 id);
const char *trace_model__process_name(const struct trace_model *m, __u32 pid); /* comm */
/* Its parent's pid (PROCESS, FORK records), 0 when unknown. */
__u32 trace_model__ppid(const struct trace_model *m, __u32 pid);
/*
 * PID is one of OWNER's pool of processes (a family's finding: DataLoader workers by their
 * frames): named by its part, "WHAT N of OWNER_WHAT OWNER" ("DataLoader worker 1 of trainer
 * 4213"), N its place in the pool by pid from 0, in place of its comm. WHAT and OWNER_WHAT
 * are static strings.
 */
void trace_model__join_pool(struct trace_model *m, __u32 pid, __u32 owner, const char *what,
			    const char *owner_what);
/* That name, NULL for a process in no pool. */
const char *trace_model__process_role(const struct trace_model *m, __u32 pid);
/*
 * PID's part in a pool, as its parts: the pool's WHAT ("DataLoader worker"), *OWNER and *N
 * its place; for a pool's owner, OWNER_WHAT ("trainer") and *OWNER, *N untouched; NULL when
 * neither.
 */
const char *trace_model__pool(const struct trace_model *m, __u32 pid, __u32 *owner, __u32 *n);
/* Its comm (python3), whatever part it has; NULL when unknown. */
const char *trace_model__process_comm(const struct trace_model *m, __u32 pid);
const char *trace_model__cmdline(const struct trace_model *m, __u32 pid);
const char *trace_model__thread_name(const struct trace_model *m, __u32 tid);
/*
 * Thread TID is bpfsight's own in the job (the cupti-shim's poller, BS_SHIM_THREAD_NAME): the
 * tracer's, never one of the job's threads a report shows as its own.
 */
int trace_model__own_thread(const struct trace_model *m, __u32 tid);
/*
 * A thread named by the application (Python's threading, nvtxNameOsThread): the name outlives
 * later comm changes.
 */
void trace_model__name_thread(struct trace_model *m, __u32 tid, const char *name);
/*
 * Process PID's name, given by a reader that has no records of it (a server's answers: the
 * name the file's reports gave it, stats --from's verdict).
 */
void trace_model__name_process(struct trace_model *m, __u32 pid, const char *name);
/* The name a SYMBOL record gave ADDR in process PID (a kernel's host stub, a CUfunction). */
const char *trace_model__symbol(const struct trace_model *m, __u32 pid, __u64 addr);
/* An interned call stack (STACK record): frames innermost first (records.h struct bs_frame). */
struct trace_stack {
	__u32 id;
	__u16 nframes;
	__u16 flags; /* BS_STACK_* */
	const struct bs_frame *frames;
	/*
	 * A stack a reader knows only by what it says (a server's answers: its `stack` row's call
	 * and line, no frames): stack_call.h's answers, CALL NULL when it is in none. NULL WHERE:
	 * a STACK record's, read from its frames.
	 */
	const char *call, *where;
};

/* The stack a STACK record defined with ID, or NULL. Valid until trace_model__free. */
const struct trace_stack *trace_model__stack(const struct trace_model *m, __u32 id);
/*
 * Stack ID known by what it says (stats --from's verdict: no frames shipped back): the call it
 * is in (NULL: none) and where it is in the job's own code. 0 or -ENOMEM.
 */
int trace_model__add_said_stack(struct trace_model *m, __u32 id, const char *call,
				const char *where);
/*
 * Where record REC really began: the walk clips an interval that began before the recording's
 * start to it (struct rec_decoder.span), and says so here for the record it handed last.
 */
__u64 trace_model__began(const struct trace_model *m, const struct bs_hdr *rec);
void trace_model__set_clipped(struct trace_model *m, const struct bs_hdr *rec, __u64 began);
/* The stack a STACK_REF gave the event record REC (--stacks), or NULL. */
const struct trace_stack *trace_model__event_stack(const struct trace_model *m,
						   const struct bs_hdr *rec);
/* The stack a STACK_REF gave the record of TYPE of thread TID at TS, or NULL. */
const struct trace_stack *trace_model__stack_of(const struct trace_model *m, __u16 type, __u32 tid,
						__u64 ts);
/*
 * A merged file's rank that PID belongs to (its RANK record: file, host, alignment), or NULL;
 * trace_model__process_name names a rank's own process "rank 3 @ host".
 */
struct trace_rank;
struct trace_ranks;
const struct trace_rank *trace_model__rank(const struct trace_model *m, __u32 pid);
/* Every rank of a merged file (trace_ranks.h), NULL for another file. */
const struct trace_ranks *trace_model__ranks(const struct trace_model *m);
/* What the unwind tables took (the latest UNWIND_USAGE record), NULL when none needed one. */
const struct bs_unwind_usage *trace_model__unwind_usage(const struct trace_model *m);
/* The hang trigger's snapshot of the job's threads (trace_snaps.h), NULL when none. */
struct trace_snaps;
const struct trace_snaps *trace_model__snaps(const struct trace_model *m);
struct family;
/* F's walk state (family.h walk_new), or NULL when F keeps none. */
void *trace_model__walk(const struct trace_model *m, const struct family *f);

#endif /* BPFSIGHT_TRACE_MODEL_H */
