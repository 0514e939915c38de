/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gpu family's records (block 0x60, shared with the cupti-shim channel: shim_records.h):
 * what CUPTI timed on the GPU and the API calls that launched it, written by the shim
 * (cupti-shim/shim_decode.c) and carried in its batches. docs/GPU.md for users, docs/FORMAT.md
 * lists the fields.
 */
#ifndef BPFSIGHT_GPU_RECORDS_H
#define BPFSIGHT_GPU_RECORDS_H

#include "shim_records.h"

#define BS_REC_GPU_KERNEL     0x62 /* one kernel execution (CUPTI CONCURRENT_KERNEL) */
#define BS_REC_GPU_MEMCPY     0x63 /* one copy on the GPU (CUPTI MEMCPY, MEMCPY2 peer) */
#define BS_REC_GPU_MEMSET     0x64 /* one memset on the GPU (CUPTI MEMSET) */
#define BS_REC_GPU_API	      0x65 /* CUPTI's view of a launching API call: the correlation id */
#define BS_REC_GPU_GRAPH_NODE 0x66 /* a CUDA graph node made or copied (CUPTI resource callbacks) */

/*
 * One kernel on the GPU. hdr.ts = GPU start (CLOCK_MONOTONIC: the shim registers CUPTI's
 * timestamp callback), hdr.tid = the thread that launched it (0 = not known).
 */
struct bs_gpu_kernel {
	struct bs_hdr h;
	__u64 dur;
	__u64 call_ts;	   /* entry of the launching call (see BS_GPU_* flags); 0 = unknown */
	__u32 correlation; /* CUPTI correlation id (per process) */
	__u32 name_id;	   /* string: the kernel's name as CUPTI gives it (mangled) */
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 grid[3];
	__u32 block[3];
	__u32 shmem_dynamic;
	__u32 shmem_static;
	__u16 registers; /* per thread */
	__u16 flags;	 /* BS_GPU_* */
	__u32 graph_id;	 /* 0 = not launched from a CUDA graph */
	__u32 _pad;
	__u64 graph_node_id;
};

/* Flags of GPU records: how call_ts/hdr.tid were found. */
#define BS_GPU_CALL_CUDA 0x1 /* a cuda-family event starts at call_ts on hdr.tid */
#define BS_GPU_CALL_API	 0x2 /* only CUPTI's API record was seen: call_ts is its start */
#define BS_GPU_GRAPH	 0x4 /* a node of a CUDA graph */

/* One copy. Kinds are CUPTI's: copy_kind CUpti_ActivityMemcpyKind, src/dst CUpti_ActivityMemoryKind. */
struct bs_gpu_memcpy {
	struct bs_hdr h; /* as bs_gpu_kernel */
	__u64 dur;
	__u64 call_ts;
	__u64 bytes;
	__u32 correlation;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u8 copy_kind; /* 1 HtoD, 2 DtoH, 3 HtoA, 4 AtoH, 5 AtoA, 6 AtoD, 7 DtoA, 8 DtoD, 9 HtoH, 10 PtoP */
	__u8 src_kind;
	__u8 dst_kind;
	__u8 async;  /* CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC */
	__u16 flags; /* BS_GPU_* */
	__u16 _pad;
	__u32 src_device; /* peer copies (MEMCPY2); else = device */
	__u32 dst_device;
	__u32 graph_id;
	__u32 _pad2;
	__u64 graph_node_id;
};

struct bs_gpu_memset {
	struct bs_hdr h; /* as bs_gpu_kernel */
	__u64 dur;
	__u64 call_ts;
	__u64 bytes;
	__u32 correlation;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 value;
	__u16 mem_kind; /* CUpti_ActivityMemoryKind */
	__u16 flags;	/* BS_GPU_* */
	__u32 graph_id;
	__u32 _pad;
	__u64 graph_node_id;
};

/*
 * A runtime or driver call as CUPTI saw it (only the calls that put work on the GPU are
 * enabled): what joins a GPU record's correlation id to a thread and a time. hdr.ts = CUPTI's
 * start, hdr.tid = the calling thread.
 */
struct bs_gpu_api {
	struct bs_hdr h;
	__u64 dur;
	__u64 call_ts; /* entry of the cuda-family event containing it (0 = none) */
	__u32 correlation;
	__u32 cbid;    /* CUPTI callback id in its domain */
	__u32 name_id; /* string: cuptiGetCallbackName */
	__u32 ret;     /* cudaError_t or CUresult */
	__u16 domain;  /* 1 = driver, 2 = runtime (CUpti_CallbackDomain) */
	__u16 flags;   /* BS_GPU_CALL_CUDA when call_ts was found */
	__u32 _pad;
};

/*
 * A node of a CUDA graph was made (captured from a stream, added by cudaGraphAdd*Node) or
 * copied (cudaGraphInstantiate copies a graph's nodes into the executable graph, whose ids
 * are the ones a replayed op's graph_node_id names; cudaGraphClone). hdr.ts = when, hdr.tid =
 * the thread, inside the call that made it: for a captured launch, the launch call. The
 * reading side follows a replayed op's node through its copies to the node made first, and so
 * to the call, op and line that captured it (docs/GPU.md, "CUDA graphs").
 */
struct bs_gpu_graph_node {
	struct bs_hdr h;
	__u64 node_id;	    /* cuptiGetGraphNodeId: unique in the process */
	__u64 orig_node_id; /* a copy's original node; 0 = made, not copied */
	__u32 graph_id;	    /* cuptiGetGraphId of the graph it is in (a copy: the new graph) */
	__u32 orig_graph_id;
	__u32 node_type; /* CUgraphNodeType: 0 kernel, 1 memcpy, 2 memset, 3 host, 4 graph... */
	__u32 _pad;
};

BS_ASSERT_RECORD(bs_gpu_kernel, 112);
BS_ASSERT_RECORD(bs_gpu_memcpy, 96);
BS_ASSERT_RECORD(bs_gpu_memset, 88);
BS_ASSERT_RECORD(bs_gpu_api, 64);
BS_ASSERT_RECORD(bs_gpu_graph_node, 56);

/* The gpu family's bits of a STATUS record's state (shim_records.h). */
#define BS_SHIM_ST_GPU_ON     0x04 /* CUPTI activity kinds enabled */
#define BS_SHIM_ST_CUPTI_BUSY 0x10 /* another CUPTI client (profiler) owns CUPTI: backed off */

#endif /* BPFSIGHT_GPU_RECORDS_H */
