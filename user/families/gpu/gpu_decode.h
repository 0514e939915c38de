/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading side of the gpu family, shared by its decoders (gpu_decode.c), its reports and the
 * exports: one view of a GPU operation whatever its record, CUPTI's names for copy and memory
 * kinds, and the id that ties a launching call to its GPU work in a streamed export.
 */
#ifndef BPFSIGHT_GPU_DECODE_H
#define BPFSIGHT_GPU_DECODE_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "trace_model.h"

/* A kernel, copy or memset, as the reports and exports need it. */
struct gpu_op {
	__u16 type;  /* BS_REC_GPU_KERNEL, _MEMCPY or _MEMSET */
	__u16 flags; /* BS_GPU_* */
	__u32 pid, tid;
	__u64 ts, dur, call_ts;
	__u32 device, context, stream, correlation;
	__u64 bytes;	/* copies and memsets */
	__u32 name_id;	/* kernels: string id of the demangled name */
	__u8 copy_kind; /* copies: CUpti_ActivityMemcpyKind */
};

/* 1 and *OP filled for a GPU operation record of its full size, else 0. */
int gpu_op__read(const struct bs_hdr *rec, struct gpu_op *op);
/*
 * dump's name of OP: a kernel's name ("[unknown kernel]" when its string is missing), nsys's
 * "[CUDA memcpy Host-to-Device]" and "[CUDA memset]". Static or model strings.
 */
const char *gpu_op__name(const struct gpu_op *op, const struct trace_model *m);

#define GPU_UNKNOWN_KERNEL "[unknown kernel]"
#define GPU_MEMSET_NAME	   "[CUDA memset]"

/* CUpti_ActivityMemcpyKind: "HtoD" ..., "unknown" outside 1..10. */
const char *gpu_copy_kind_name(__u32 kind);
/* "[CUDA memcpy Host-to-Device]" ..., "[CUDA memcpy Unknown]" outside 1..10. */
const char *gpu_copy_op_name(__u32 kind);
/* CUpti_ActivityMemoryKind: "pageable", "pinned", ..., "unknown". */
const char *gpu_mem_kind_name(__u32 kind);
/* How a GPU record's call_ts was found: "cuda", "api" or "none". */
const char *gpu_link_name(__u16 flags);
/* CUptiResult's name: "CUPTI_SUCCESS", "CUPTI_ERROR_UNKNOWN"...; NULL for a value it lacks. */
const char *cupti_result_name(__s32 result);
/* Names of a STATUS record's state bits, by bit number (32; NULL: unnamed): shim_family.h. */
const char *const *shim_state_names(void);

/*
 * Is REC a cuda-family call that puts work on the GPU (groups LAUNCH, GRAPH, MEMCPY, MEMSET):
 * the kind of call a GPU record's call_ts points at (BS_GPU_CALL_CUDA)? *NAME = its name.
 */
int gpu_is_launching_call(const struct bs_hdr *rec, const char **name);

/*
 * The id both sides of a launch -> GPU work link know while an export streams: H(pid, tid,
 * the launching call's entry time), 53 bits (exact as a JSON number), never 0. The launching
 * call is written before its GPU work is read, and CUPTI's correlation id is not in its
 * record, so the id is made from what the call and the GPU record (hdr.tid, call_ts) share.
 */
__u64 gpu_flow_id(__u32 pid, __u32 tid, __u64 call_ts);

/* Reports defined in their own files, listed in gpu_reports[] (gpu_report.c). */
struct report;
extern const struct report cuda_kern_exec_sum; /* gpu_exec_report.c */
extern const struct report gpu_idle_sum;       /* gpu_idle_report.c */
extern const struct report shim_sum;	       /* shim_report.c */

/* A row of gpu_idle_sum, and the idle time in its gaps under 1 ms (the verdict's). */
struct gpu_idle_dev {
	__u32 pid, device;
	__u64 ops, span, busy, gaps, long_gaps, short_idle, max_gap;
};
/* Each (process, device) of gpu_idle_sum's state ST, in its table's order. 0 or -errno. */
int gpu_idle__each(void *st, void (*cb)(const struct gpu_idle_dev *d, void *arg), void *arg);

#endif /* BPFSIGHT_GPU_DECODE_H */
