/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BPFSIGHT_SHIM_RECORDS_H
#define BPFSIGHT_SHIM_RECORDS_H

#include "records.h"

/*
 * The records of the cupti-shim channel (block 0x60: the channel and the gpu family; block
 * 0x70: the nvtx family), written by the shim (cupti-shim/), carried by bpf/shim.bpf.c, read by
 * user/shim_channel/, user/families/gpu/ and user/families/nvtx/ (docs/GPU.md, docs/NVTX.md).
 *
 * The shim (loaded into the application by CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH)
 * writes the records below into per-thread buffers in its own memory and hands each full (or
 * timed-out) buffer to BPF through the USDT probe bpfsight:batch(buf, bytes). BPF copies the
 * buffer into one SHIM_BATCH ring record; user space unpacks it and writes every record inside
 * to the trace as an ordinary record: hdr.pid replaced by the pid BPF saw, hdr.cpu = 0,
 * string ids translated from the shim's (per process) to the file's (see BS_REC_STRING below).
 *
 * USDT probes of provider "bpfsight" (sys/sdt.h, each with a semaphore; a tracer attaching a
 * probe bumps its semaphore in the process, which is how the shim learns what is wanted):
 *   batch(void *buf, u64 bytes)  data channel; semaphore > 0 = a tracer is attached
 *   gpu(u32 state)    semaphore: GPU activity wanted; fired when the shim's state changes
 *   nvtx(u32 state)   semaphore: NVTX ranges wanted; fired when the shim's state changes
 *   sync(u32 zero)    semaphore: send NVTX_BEGIN records at once (--capture-range=nvtx)
 *   drain(u64 seq)    semaphore: flush everything now; fired once flushed, seq = last batch
 *   torch(u32 state)  semaphore: PyTorch ops wanted (bpf/torch_records.h); fired as gpu's
 *   torch_shapes(u32 state)  semaphore: with their input shapes
 *
 * Inside a batch the shim also writes BS_REC_STRING records (struct bs_string, id = the
 * shim's own id, unique per process) before the first record that refers to the id; user space
 * re-interns the text and rewrites the id fields marked "string" below. A shim re-sends every
 * string it uses after each new attach (ids stay the same within a process).
 */
#define BS_REC_SHIM_BATCH  0x60 /* ring only: one batch of shim records (never on disk) */
#define BS_REC_SHIM_STATUS 0x61 /* the shim's state changed, or it reports an error or drops */
#define BS_REC_GPU_KERNEL  0x62 /* one kernel execution (CUPTI CONCURRENT_KERNEL) */
#define BS_REC_GPU_MEMCPY  0x63 /* one copy on the GPU (CUPTI MEMCPY, MEMCPY2 peer) */
#define BS_REC_GPU_MEMSET  0x64 /* one memset on the GPU (CUPTI MEMSET) */
#define BS_REC_GPU_API	   0x65 /* CUPTI's view of a launching API call: the correlation id */

/* Records the cupti-shim or CUPTI dropped, buffers full (a loss cause, records.h). */
#define BS_LOSS_SHIM 6

#define BS_SHIM_VERSION	  1
#define BS_SHIM_MAGIC	  0x48534253u /* "BSSH" little-endian */
#define BS_SHIM_BATCH_MAX 16384	      /* bytes of records in one batch */

/* The start of the buffer the shim passes to bpfsight:batch (copied with it). */
struct bs_shim_batch_hdr {
	__u32 magic;   /* BS_SHIM_MAGIC */
	__u32 version; /* BS_SHIM_VERSION */
	__u32 nrec;    /* records that follow */
	__u32 len;     /* bytes of records that follow (<= BS_SHIM_BATCH_MAX) */
	__u64 seq;     /* per process, from 1: a gap = batches lost */
};

/* Ring record: hdr.pid/tid = the thread that fired batch, hdr.ts = then. */
struct bs_shim_batch {
	struct bs_hdr h;
	__u32 len;   /* bytes that follow: the shim's bs_shim_batch_hdr + its records */
	__u32 flags; /* BS_SHIM_BATCH_* */
		     /* struct bs_shim_batch_hdr; records */
};

#define BS_SHIM_BATCH_FAULT 0x1 /* the user-memory read failed: content zeroed, records lost */
#define BS_SHIM_BATCH_CLAMP 0x2 /* bytes exceeded the maximum: cut at it */

/* What the shim is doing, written by the shim on every change and on every attach. */
struct bs_shim_status {
	struct bs_hdr h;     /* tid = the shim thread that noticed */
	__u32 state;	     /* BS_SHIM_ST_* bits now true */
	__u32 event;	     /* BS_SHIM_EV_*: why this record */
	__s32 cupti_result;  /* CUptiResult of the failing call (0 = none) */
	__u32 detail_id;     /* string: the failing call, or what owns CUPTI, or a note */
	__u64 dropped;	     /* records dropped since the previous status (buffers full) */
	__u64 seq;	     /* the last batch sequence number sent before this record */
	__u32 cupti_version; /* cuptiGetVersion (0 = CUPTI not loaded) */
	__u32 _pad;
};

#define BS_SHIM_ST_CUDA_INJECTED   0x01 /* InitializeInjection ran (CUDA_INJECTION64_PATH) */
#define BS_SHIM_ST_NVTX_INJECTED   0x02 /* InitializeInjectionNvtx2 ran at least once */
#define BS_SHIM_ST_GPU_ON	   0x04 /* CUPTI activity kinds enabled */
#define BS_SHIM_ST_NVTX_ON	   0x08 /* NVTX calls recorded */
#define BS_SHIM_ST_CUPTI_BUSY	   0x10 /* another CUPTI client (profiler) owns CUPTI: backed off */
#define BS_SHIM_ST_SYNC		   0x20 /* NVTX_BEGIN records sent at once */
#define BS_SHIM_ST_NVTX_CHAINED	   0x40 /* NVTX calls are passed on to another injection library */
#define BS_SHIM_ST_PTRACE_INJECTED 0x80 /* loaded into a running process by record --inject */
#define BS_SHIM_ST_TORCH_ON	   0x100 /* a RecordFunction callback records torch ops */
#define BS_SHIM_ST_PRELOADED	   0x200 /* loaded by LD_PRELOAD: started by its constructor */

/*
 * record --inject installs the shim under a name ending with this: its constructor starts
 * the poller (no CUDA or NVTX entry point will ever call it), sets PTRACE_INJECTED, and the
 * poller loads CUPTI once the process has libcuda and GPU activity is wanted.
 */
#define BS_SHIM_INJECT_SUFFIX "-ptrace.so"

#define BS_SHIM_EV_ATTACH      1 /* a tracer attached (first batch of a session) */
#define BS_SHIM_EV_STATE       2 /* state bits changed */
#define BS_SHIM_EV_CUPTI_ERROR 3 /* a CUPTI call failed: cupti_result, detail_id */
#define BS_SHIM_EV_DRAINED     4 /* drain requested and done: everything before seq is sent */
#define BS_SHIM_EV_DROPPED     5 /* dropped > 0 */
#define BS_SHIM_EV_EXIT	       6 /* the process is exiting: final flush */
/*
 * Written by the recorder, not the shim: a target of -t gpu/nvtx has no shim and gets none
 * (not started with it and no --inject, or the injection was refused): detail_id says why.
 */
#define BS_SHIM_EV_NO_SHIM 7
/*
 * The torch module's news (cupti-shim/shim_torch.c), once per session: detail_id says what
 * (callback registered, the version refused, libtorch not loaded yet), cupti_result is 0 when
 * ops are recorded, else a negative errno.
 */
#define BS_SHIM_EV_TORCH 8
/*
 * A tracer joined a session another tracer's attach began (the join semaphore rose): every
 * string of the session, the NVTX names and the CUPTI errors are sent again, then this, so
 * the newcomer's file names what it records; the first tracer gets them twice (same ids).
 */
#define BS_SHIM_EV_JOIN 9

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

BS_ASSERT_RECORD(bs_shim_batch_hdr, 24);
BS_ASSERT_RECORD(bs_shim_batch, 32);
BS_ASSERT_RECORD(bs_shim_status, 64);
BS_ASSERT_RECORD(bs_gpu_kernel, 112);
BS_ASSERT_RECORD(bs_gpu_memcpy, 96);
BS_ASSERT_RECORD(bs_gpu_memset, 88);
BS_ASSERT_RECORD(bs_gpu_api, 64);

/* nvtx family: written by the shim's NVTX handlers. */
#define BS_REC_NVTX_RANGE 0x70 /* a push/pop or start/end range, written when it ends */
#define BS_REC_NVTX_MARK  0x71 /* an instant marker */
#define BS_REC_NVTX_NAME  0x72 /* a name given to a thread or a category */
#define BS_REC_NVTX_BEGIN 0x73 /* a range began (sync mode only: --capture-range=nvtx) */

/* hdr.ts = start, hdr.tid = the thread that pushed or started it. */
struct bs_nvtx_range {
	struct bs_hdr h;
	__u64 dur;	 /* with BS_NVTX_OPEN: until the recording stopped */
	__u64 range_id;	 /* start/end ranges: nvtxRangeStart's id; push/pop: 0 */
	__u64 payload;	 /* raw bits; type in BS_NVTX_PAYLOAD_* */
	__u32 name_id;	 /* string: the message (0 = none) */
	__u32 domain_id; /* string: the domain's name (0 = the default domain) */
	__u32 end_tid;	 /* the thread that ended it (= hdr.tid for push/pop) */
	__u32 category;
	__u32 color; /* ARGB (BS_NVTX_COLOR) */
	__u16 depth; /* push/pop: ranges of the domain open on the thread around it */
	__u16 flags; /* BS_NVTX_* */
};

/* hdr.ts = the mark, hdr.tid = the thread. */
struct bs_nvtx_mark {
	struct bs_hdr h;
	__u64 payload;
	__u32 name_id;
	__u32 domain_id;
	__u32 category;
	__u32 color;
	__u16 flags;
	__u16 _pad;
	__u32 _pad2;
};

/* nvtxNameOsThread / nvtxNameCategory / nvtxDomainNameCategory. hdr.tid = the caller. */
struct bs_nvtx_name {
	struct bs_hdr h;
	__u64 key;	 /* the OS thread id, or the category */
	__u32 kind;	 /* BS_NVTX_NAME_* */
	__u32 name_id;	 /* string */
	__u32 domain_id; /* string (categories are per domain) */
	__u32 _pad;
};

#define BS_NVTX_NAME_THREAD   1
#define BS_NVTX_NAME_CATEGORY 2

/* Sync mode: a range began (its RANGE record follows when it ends). */
struct bs_nvtx_begin {
	struct bs_hdr h;
	__u64 range_id;
	__u32 name_id;
	__u32 domain_id;
};

#define BS_NVTX_PUSHPOP	     0x001 /* nvtxRangePush/Pop (else start/end) */
#define BS_NVTX_OPEN	     0x002 /* not ended when the recording stopped */
#define BS_NVTX_COLOR	     0x004 /* color holds an ARGB value */
#define BS_NVTX_PAYLOAD_MASK 0x070
#define BS_NVTX_PAYLOAD_NONE 0x000
#define BS_NVTX_PAYLOAD_U64  0x010
#define BS_NVTX_PAYLOAD_I64  0x020
#define BS_NVTX_PAYLOAD_F64  0x030
#define BS_NVTX_PAYLOAD_U32  0x040
#define BS_NVTX_PAYLOAD_I32  0x050
#define BS_NVTX_PAYLOAD_F32  0x060
#define BS_NVTX_REGISTERED   0x080 /* the message was a registered string handle */

BS_ASSERT_RECORD(bs_nvtx_range, 72);
BS_ASSERT_RECORD(bs_nvtx_mark, 56);
BS_ASSERT_RECORD(bs_nvtx_name, 48);
BS_ASSERT_RECORD(bs_nvtx_begin, 40);

#endif /* BPFSIGHT_SHIM_RECORDS_H */
