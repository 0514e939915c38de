/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NVTX ranges projected onto the GPU, nsys's "NVTX GPU projection": each closed range with the
 * GPU operations launched by calls its thread made while it was open (the launching call's
 * entry time inside the range). One implementation for the nvtx_gpu_proj_sum report and the
 * Chrome export's gpu_user_annotation events. Only operations whose launching call is known
 * (BS_GPU_CALL_CUDA or _API) can be placed; ranges still open at the end (BS_NVTX_OPEN) are
 * left out, their end being unknown. Holds every range and linked operation until the join.
 */
#ifndef BPFSIGHT_NVTX_PROJ_H
#define BPFSIGHT_NVTX_PROJ_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "trace_model.h"

struct nvtx_proj_range {
	__u32 pid, tid;
	__u64 ts, dur;
	const char *domain, *text; /* model strings: valid while the model is */
	__u16 flags;		   /* BS_NVTX_* */
};

struct nvtx_proj_op {
	__u32 pid, tid; /* the launching thread */
	__u64 call_ts, ts, dur;
	__u32 device, stream;
};

struct nvtx_proj;

struct nvtx_proj *nvtx_proj__new(void);
void nvtx_proj__free(struct nvtx_proj *p);
/* Keep REC when it is a closed range or a linked GPU operation: 0, or -ENOMEM. */
int nvtx_proj__add(struct nvtx_proj *p, const struct bs_hdr *rec, const struct trace_model *m);
/*
 * FN for each range in the order they were added, with the N (>= 1) operations its thread
 * launched inside it, by launch time; ranges without any are skipped. Stops at FN's first
 * non-zero return and returns it (or -ENOMEM).
 */
int nvtx_proj__join(struct nvtx_proj *p,
		    int (*fn)(void *arg, const struct nvtx_proj_range *r,
			      const struct nvtx_proj_op *ops, size_t n),
		    void *arg);

#endif /* BPFSIGHT_NVTX_PROJ_H */
