/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ops and the GPU work they launched, for the torch reports: every op of a trace and every
 * GPU operation whose launching call is known (gpu_op.call_ts), joined by time on the
 * launching thread. An op's children are the ops of its thread inside it; its self time is
 * its duration less theirs. A GPU operation belongs to the innermost op open on its thread at
 * its launching call (as torch.profiler gives a kernel to the op that launched it): its
 * time is that op's GPU self time, and the GPU total time of every op around it. Asked for,
 * the memory allocated and freed in each op's time too (torch_op_mem.h), its self memory less
 * its children's. Holds every op and linked operation until the join (as nvtx_proj does for
 * ranges). An op that is the only child of an op of its own name (dropout's div_ inside
 * div_) is merged into it as key_averages() merges it: it is not a row of its own, its
 * children and GPU work are its parent's.
 */
#ifndef BPFSIGHT_TORCH_OPS_H
#define BPFSIGHT_TORCH_OPS_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "trace_model.h"

struct torch_op_row {
	__u32 pid, tid;
	__u64 ts, dur;
	const char *name; /* a model string: valid while the model is */
	/* --torch-shapes' input shapes and concrete inputs (model strings), NULL: none */
	const char *shapes, *concrete;
	const struct trace_stack *stack; /* --stacks=torch's (the model's), NULL: none */
	__u64 flops;			 /* torch.profiler's (torch_flops.h) */
	__s64 seq;			 /* the record's: pairs a backward op with its forward op */
	__u64 torch_tid, fwd_tid;
	__u8 scope;
	/*
	 * Filled by the join. MERGED: key_averages() leaves it out: the only child of an op of
	 * its own name (torch.profiler's EventList._remove_dup_nodes), its time and its GPU work
	 * that op's; every other field then stays 0.
	 */
	__u8 merged;
	long parent; /* the op it is inside on its thread (merged or not), -1: none */
	__u64 self_ns, gpu_self_ns, gpu_total_ns;
	__u32 gpu_ops; /* launched while it was the innermost op */
	/* torch_ops.mem: bytes allocated less bytes freed in its time; self: less its children's */
	__s64 cpu_mem, cuda_mem, self_cpu_mem, self_cuda_mem;
};

struct torch_gpu_row {
	__u32 pid, tid; /* the launching thread */
	__u64 call_ts, ts, dur;
	const char *name; /* dump's name: a kernel's, "[CUDA memcpy ...]" */
	/* filled by the join: the op it belongs to, or -1 */
	long op;
};

struct torch_ops {
	struct torch_op_row *ops;
	size_t nops, cap_ops;
	struct torch_gpu_row *gpu;
	size_t ngpu, cap_gpu;
	struct torch_op_mem *mem; /* NULL: memory not asked for */
};

/* WITH_MEM: the ops' memory too (the trace's MEM_ALLOC records). */
struct torch_ops *torch_ops__new(int with_mem);
void torch_ops__free(struct torch_ops *t);
/* Keep REC when it is an op, a linked GPU operation or (asked for) memory: 0, or -ENOMEM. */
int torch_ops__add(struct torch_ops *t, const struct bs_hdr *rec, const struct trace_model *m);
/*
 * Sort both by thread and time and fill the join's fields: ops by (pid, tid, start, longer
 * first), GPU operations by (pid, tid, launching call); the ops' memory. 0 or -ENOMEM.
 */
int torch_ops__join(struct torch_ops *t);

#endif /* BPFSIGHT_TORCH_OPS_H */
