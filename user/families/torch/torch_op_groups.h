/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * torch_op_sum's rows as key_averages() makes them: the joined ops (torch_ops.h) but those
 * merged, grouped by process, name and scope, and, asked for, by input shapes
 * (group_by_input_shape=True) or by the first N Python frames of their stack
 * (group_by_stack_n=N). A backward op, and every op inside one, has the stack of its forward
 * op (the first op of the forward thread with the backward op's sequence number), as
 * torch.profiler's _set_backward_stacktraces gives it; stack frames are torch's text,
 * "FILE(LINE): FUNCTION", innermost first, less the frames torch leaves out (autograd's
 * backward and _make_grads).
 */
#ifndef BPFSIGHT_TORCH_OP_GROUPS_H
#define BPFSIGHT_TORCH_OP_GROUPS_H

#include <stddef.h>
#include <linux/types.h>
#include "trace_model.h"

struct torch_ops;

enum torch_group_by {
	TORCH_GROUP_NAME,  /* process, name, scope */
	TORCH_GROUP_SHAPE, /* ... and input shapes */
	TORCH_GROUP_STACK, /* ... and the first N Python frames */
};

struct torch_op_group {
	__u32 pid;
	const char *name, *scope;
	const char *by; /* the input shapes or the frames ("F(L): f; F(L): g"), NULL: by name */
	__u64 count, cpu_total, cpu_max, cpu_self, gpu_self, gpu_total, gpu_ops, flops;
	__s64 cpu_mem, self_cpu_mem, cuda_mem, self_cuda_mem;
};

struct torch_op_groups {
	struct torch_op_group *v;
	size_t n;
	char **texts; /* the stack texts BY points at, freed with the groups */
	size_t ntexts;
};

/*
 * The rows of T (joined) grouped BY (N: the frames of TORCH_GROUP_STACK), by CPU total
 * descending, then by name. 0 or -ENOMEM.
 */
int torch_op_groups__make(struct torch_op_groups *g, const struct torch_ops *t,
			  const struct trace_model *m, enum torch_group_by by, unsigned n);
void torch_op_groups__free(struct torch_op_groups *g);

#endif /* BPFSIGHT_TORCH_OP_GROUPS_H */
