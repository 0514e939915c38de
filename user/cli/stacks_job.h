/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight stacks` over the processes of a job (several -p, a launcher's children, --all): the
 * threads grouped by what they do (the same Python frames, the same NCCL call; native frames
 * where a thread has no Python ones), each group with the ranks it holds, and the odd ones
 * out: the threads doing what most processes do not, with their process's rank (RANK or
 * LOCAL_RANK in its environment). A hung job's waiters make one group; the rank that never
 * came is an odd one out.
 */
#ifndef BPFSIGHT_STACKS_JOB_H
#define BPFSIGHT_STACKS_JOB_H

#include <stdio.h>
#include <sys/types.h>
#include "snap.h"

struct trace_model;
struct trace_stack;
struct bs_frame;

/* Which native frames a stack shows: those above its innermost Python frame, all, none. */
enum native_mode { NATIVE_LEAF, NATIVE_ALL, NATIVE_NONE };

/*
 * The frames of S shown in MODE, into OUT (room for S's): a thread with Python frames keeps
 * them and, by default, the native frames above the innermost one; one without keeps all.
 */
__u16 stacks_job__frames(const struct trace_stack *s, enum native_mode mode, struct bs_frame *out);
/* One frame, a line: "    func (file:line)" or "    func (module)". */
void stacks_job__print_frame(FILE *f, const struct bs_frame *fr, const struct trace_model *m);
/* Print the grouped view of the N processes S (read by one session, named by M). */
void stacks_job__print(const struct snap *s, int n, const struct trace_model *m,
		       enum native_mode mode, int active_only, FILE *f);
/* " for 3.1 s": how long TH had been off its CPU when read ("" when it runs, or under 1 ms). */
const char *stacks_job__for(const struct snap_thread *th, char *buf, size_t len);
/* The rank a process's environment gives it (RANK, else LOCAL_RANK), -1 when none. */
int stacks_job__rank(const struct snap *s);
/*
 * The processes of the job on this machine (--all): those with RANK or LOCAL_RANK in their
 * environment (torchrun's, mpirun's workers) or libnccl mapped. Into OUT (at most MAX, in pid
 * order); how many there are.
 */
int stacks_job__find(pid_t *out, int max);

#endif /* BPFSIGHT_STACKS_JOB_H */
