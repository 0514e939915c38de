/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The mem family's records (block 0xb0): where a job's memory goes. Tensor allocations and
 * frees on the CPU and the GPU as PyTorch's allocators report them, the allocators' totals,
 * the process's resident memory, samples of its growth with the stack that grew it, and
 * allocations that failed for want of memory. Written by bpf/mem.bpf.c; docs/MEMORY.md for
 * users, docs/FORMAT.md lists the fields.
 */
#ifndef BPFSIGHT_MEM_RECORDS_H
#define BPFSIGHT_MEM_RECORDS_H

#include "records.h"

#define BS_REC_MEM_ALLOC  0xb0 /* one allocation or free of a tensor's memory */
#define BS_REC_MEM_RSS	  0xb1 /* a process's resident memory, when it moved by a step */
#define BS_REC_MEM_GROW	  0xb2 /* a sample of resident growth, with the stack that grew it */
#define BS_REC_MEM_OOM	  0xb3 /* an allocation refused for want of memory */
#define BS_REC_MEM_STREAM 0xb4 /* a GPU block's stream and requested size (pytorch:malloc) */
#define BS_REC_MEM_SHRINK 0xb5 /* a sample of resident memory given back, with the stack */

/* bs_mem_alloc.device and bs_mem_oom.device: the CPU; else a CUDA device's index. */
#define BS_MEM_DEV_CPU (-1)

/* Which probe saw it (bs_mem_alloc.source, bs_mem_oom.source). */
#define BS_MEM_SRC_CPU	  1 /* c10::ProfiledCPUMemoryReporter::New / Delete / OutOfMemory */
#define BS_MEM_SRC_REPORT 2 /* c10::report{MemoryUsage,OutOfMemory}ToProfiler: GPUs, CPU maps */
#define BS_MEM_SRC_USDT	  3 /* the CUDA caching allocator's USDT probes, provider pytorch */

#define BS_MEM_FREE    0x1 /* a free: bytes is what was freed, 0 when not known */
#define BS_MEM_TOTALS  0x2 /* allocated and reserved are the allocator's own totals */
#define BS_MEM_SAMPLED 0x4 /* its stack was sampled (sample_rate): it stands for more bytes */
/* made before stacks were taken (attached: during the first scan): "(before stacks)" */
#define BS_MEM_EARLY 0x8

/*
 * hdr.ts = the call, hdr.pid/tid = the thread that allocated or freed. A free that no probe
 * tells the size of (CPU Delete, the USDT free) carries bytes = 0: readers take the size from
 * the allocation of the same address in the same process and device, and a free of memory
 * allocated before the recording began counts nothing, as torch.profiler counts it. A
 * report's free carries its size; on the CPU it may repeat the free its thread's Delete wrote
 * just before (user/families/mem/mem_live.h).
 */
struct bs_mem_alloc {
	struct bs_hdr h;
	__u64 addr;
	__u64 bytes;	 /* the block's size (allocator's rounding, as torch.profiler shows it) */
	__u64 allocated; /* BS_MEM_TOTALS: the device's allocated bytes after the call */
	__u64 reserved;	 /* BS_MEM_TOTALS: the device's reserved bytes (the caching allocator's) */
	__s16 device;	 /* BS_MEM_DEV_CPU, or the CUDA device index */
	__u8 source;	 /* BS_MEM_SRC_* */
	__u8 flags;	 /* BS_MEM_* */
	/*
	 * An allocation under --stacks=mem's size while stacks were sampled: the mean bytes
	 * between samples (--mem-sample-rate). With BS_MEM_SAMPLED it carries a stack and stands
	 * for bytes / (1 - exp(-bytes / sample_rate)) bytes of its site; without, its bytes are
	 * in the sampled ones' estimates. 0: not sampled (a free, a block of at least the size,
	 * which always has its stack, or sampling off).
	 */
	__u32 sample_rate;
};

/*
 * A process's resident memory (anonymous, file and shared memory pages, as the kernel
 * counts them for /proc/PID/status): written when it moved by at least the family's RSS step
 * since the last record of the process. hdr.pid = the process, hdr.tid = the thread whose
 * page fault or unmap moved it.
 */
struct bs_mem_rss {
	struct bs_hdr h;
	__u64 rss;   /* bytes */
	__u64 anon;  /* anonymous pages' bytes */
	__u64 file;  /* file pages' bytes */
	__u64 shmem; /* shared memory's bytes */
};

/*
 * MEM_GROW: the process's resident memory grew by `bytes` since its last sample (memory
 * touched: page faults), and this thread's fault took it past the sampling step: the growth
 * is charged to this thread's stack (its STACK_REF, --stacks=mem), memory_profiler's and
 * Scalene's view of a line. hdr.ts = the fault. MEM_SHRINK, the same struct: it fell by
 * `bytes` since the last sample (an unmap, memory freed to the system), charged to the
 * thread that gave it back; readers net the two per line.
 */
struct bs_mem_grow {
	struct bs_hdr h;
	__u64 bytes; /* growth this sample stands for */
	__u64 rss;   /* the process's resident bytes after it */
};

/*
 * The CUDA caching allocator's USDT probe pytorch:malloc (torch 2.2+), which fires when
 * allocate() returns, after the report that wrote the block's MEM_ALLOC on the same thread:
 * the block's stream and the size asked for (the block's is rounded up). Readers give them to
 * the block at addr (mem_live.h). hdr.pid/tid: the allocating thread.
 */
struct bs_mem_stream {
	struct bs_hdr h;
	__u64 addr;
	__u64 stream;	 /* c10::Stream's id (StreamId), not a cudaStream_t: as snapshots show it */
	__u64 requested; /* bytes asked for */
	__s16 device;
	__u8 _pad[6];
};

/* An allocation that failed: hdr.pid/tid = the thread that asked. */
struct bs_mem_oom {
	struct bs_hdr h;
	__u64 bytes;	 /* what was asked */
	__u64 allocated; /* the device's allocated bytes then (0 when not said: CPU) */
	__u64 reserved;	 /* its reserved bytes then (0 when not said) */
	__s16 device;	 /* BS_MEM_DEV_CPU, or the CUDA device index */
	__u8 source;	 /* BS_MEM_SRC_* */
	__u8 _pad[5];
};

BS_ASSERT_RECORD(bs_mem_alloc, 64);
BS_ASSERT_RECORD(bs_mem_stream, 56);
BS_ASSERT_RECORD(bs_mem_rss, 56);
BS_ASSERT_RECORD(bs_mem_grow, 40);
BS_ASSERT_RECORD(bs_mem_oom, 56);

#endif /* BPFSIGHT_MEM_RECORDS_H */
