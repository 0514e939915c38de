/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * mem family: where a job's memory goes. PyTorch's tensor allocations and frees on the CPU
 * and the GPU, the CUDA caching allocator's totals, the process's resident memory and samples
 * of its growth with the stacks that grew it, and allocations refused for want of memory
 * (bpf/mem.bpf.c). Record side in mem.c and mem_probes.c, the reading side's live blocks in
 * mem_live.c, events in mem_decode.c. docs/MEMORY.md.
 */
#ifndef BPFSIGHT_MEM_H
#define BPFSIGHT_MEM_H

#include "family.h"
#include "family_record.h"
#include "mem_records.h"

/* --stacks=mem's default: allocations of 1 MiB and more carry their stacks. */
#define MEM_STACK_DEFAULT_BYTES (1ull << 20)
/* --mem-step's default: an RSS record and a growth sample per MiB the process moves. */
#define MEM_STEP_DEFAULT_BYTES (1ull << 20)
/*
 * --mem-sample-rate's default: allocations under --stacks=mem's size carry a stack once per
 * this many bytes allocated, on average (bench/RESULTS.md, "mem": what it costs).
 */
#define MEM_SAMPLE_DEFAULT_BYTES (512ull << 10)
/* Its largest: the rate travels in a 32-bit field of each allocation record. */
#define MEM_SAMPLE_MAX_BYTES (1ull << 30)
/*
 * --mem-native-frames' default: a memory stack's innermost native frames, the allocator's
 * callers up to the op that allocated (within 16 in every stack of a resnet18 step on Debian's
 * torch that names one), then its Python frames whole; the outer native frames (the dispatcher's outer
 * calls, the interpreter's own) are about two thirds of a stack's native frames (46 in the
 * median stack there; bench/RESULTS.md, "Issue 51's goal").
 */
#define MEM_NATIVE_FRAMES_DEFAULT 16

/* Its options (mem_options.c). */
struct mem_opts {
	__u64 step;	     /* --mem-step: bytes of RSS movement per RSS record and per sample */
	__u64 sample_rate;   /* --mem-sample-rate: mean bytes between sampled stacks; 0 off */
	__u32 native_frames; /* --mem-native-frames: BS_STACK_MAX_FRAMES: all */
};
extern const struct family_option mem_options[];
void mem_opts_init(void *opts, const char *cmd);
void mem_opts_describe(const void *opts, char *buf, size_t len);

extern const struct rec_decoder mem_decoders[]; /* mem_decode.c */
extern const struct metrics_family mem_metrics; /* mem_metrics.c */
extern const struct top_family mem_top;		/* mem_top.c */
extern const struct page_family mem_page;	/* mem_page.c */
extern const struct family family_mem;

/* Its export hooks, and the format of its own (docs/EXPORT.md, "Memory"). */
extern const struct family_export mem_export;		 /* mem_export.c */
extern const struct family_sql mem_sql;			 /* mem_sql.c */
extern const struct ch_report ch_mem_peak, ch_mem_leaks; /* mem_peak_sql.c, mem_leaks_sql.c */
/* What mem_leaks in the server needs of a file past its events' rows (EX_ROWS). */
extern const struct ex_rows mem_rows;		     /* mem_rows.c */
extern const struct exporter export_memory_snapshot; /* export_memory_snapshot.c */
/* export_mem_profiles.c: the heap profile and the flame graphs, by allocation stack */
extern const struct exporter export_pprof_heap, export_memory_flamegraph,
	export_memory_flamegraph_leaks;

/* "cpu", "cuda:0": a device as mem's events and reports name it. */
const char *mem_device_name(__s16 device, char *buf, size_t len);

#endif /* BPFSIGHT_MEM_H */
