/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a thread's stack says it is doing, in the job's words: the call it waits in (an NCCL
 * collective, a CUDA synchronization, torch.distributed's all_reduce) and the line of the job's
 * own code it is at. Read by `bpfsight stacks` over a job's processes (user/cli/stacks_job.c)
 * and by the verdict's rules over the recording's edges (user/families/proc/proc_edges.h).
 */
#ifndef BPFSIGHT_STACK_CALL_H
#define BPFSIGHT_STACK_CALL_H

#include <stddef.h>

struct trace_model;
struct trace_stack;
struct ucall_table;

/*
 * The function of T a stack is in: its outermost native frame that is an entry of T (of any
 * uprobe-API family's table with T NULL), as T names it; NULL when none.
 */
const char *stack_call__api(const struct trace_stack *st, const struct trace_model *m,
			    const struct ucall_table *t);

/*
 * The call a stack is in: its outermost native frame that is a function of a uprobe-API
 * family's table (ncclAllReduce, cudaDeviceSynchronize), else its outermost Python frame in
 * torch.distributed ("torch.distributed's all_reduce"); NULL when neither. Written into BUF.
 */
const char *stack_call__in(const struct trace_stack *st, const struct trace_model *m, char *buf,
			   size_t len);
/*
 * Where a stack is in the job's own code: "`load_batch` (hang_rank.py:43)", its innermost
 * Python frame outside the interpreter's library and installed packages (else its innermost
 * Python frame, else its innermost named native one); "code whose stack was not read".
 */
const char *stack_call__where(const struct trace_stack *st, const struct trace_model *m, char *buf,
			      size_t len);
/* One frame as stack_call__where names it: "`load_batch` (hang_rank.py:43)", "`read` (libc.so.6)". */
struct bs_frame;
const char *stack_call__frame(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len);
/* A Python source file of the interpreter's library or of an installed package. */
int stack_call__library_file(const char *file);

#endif /* BPFSIGHT_STACK_CALL_H */
