/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory an op's time holds, as torch.profiler's key_averages() counts it (its
 * _parse_kineto_results): the bytes allocated less the bytes freed (mem's MEM_ALLOC records)
 * whose time lies in the op's [start, end], both ends included, by ANY thread of its process;
 * on the CPU and on CUDA devices apart. A free counts the size of its allocation (mem_live.h):
 * a CPU block allocated before the trace saw it is not counted at all (torch.profiler gets no
 * event for it), a GPU free counts what its record says. An event in no op's time is
 * torch.profiler's "[memory]" row. The ops' self memory (less their children's) is
 * torch_ops__join's, which nests them. Times are ns: torch.profiler's are rounded to us
 * first (docs/TORCH.md says what that moves).
 */
#ifndef BPFSIGHT_TORCH_OP_MEM_H
#define BPFSIGHT_TORCH_OP_MEM_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct mem_live;
struct torch_op_row;

/* An allocation (bytes > 0) or a free (bytes < 0) of a known size. */
struct torch_mem_ev {
	__u32 pid;
	__s16 device; /* BS_MEM_DEV_CPU, or a CUDA device */
	__u64 ts;
	__s64 bytes;
};

struct torch_op_mem {
	struct mem_live *live;
	struct torch_mem_ev *ev;
	size_t n, cap;
	int seen; /* the trace has MEM_ALLOC records: the reports show memory */
	/* filled by torch_op_mem__join: the events in no op's time ("[memory]") */
	__u64 loose;
	__s64 loose_cpu, loose_cuda;
};

struct torch_op_mem *torch_op_mem__new(void);
void torch_op_mem__free(struct torch_op_mem *mm);
/* Feed every record in file order (allocations, frees, process exits): 0 or -ENOMEM. */
int torch_op_mem__add(struct torch_op_mem *mm, const struct bs_hdr *rec);
/*
 * Fill each of OPS' cpu_mem and cuda_mem (the events of its process in its time) and the
 * loose events. 0 or -ENOMEM.
 */
int torch_op_mem__join(struct torch_op_mem *mm, struct torch_op_row *ops, size_t nops);

#endif /* BPFSIGHT_TORCH_OP_MEM_H */
