/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cuda family: CUDA runtime (libcudart, shared or static) and driver (libcuda) API calls,
 * traced by uprobes wherever the code is mapped. Record side in cuda.c, the API table in
 * cuda_api.c, the decoder in cuda_decode.c, the reports in cuda_report.c, its profiler ranges
 * as steps of the per-step reports (--steps=cudaProfilerApi) in cuda_step_src.c.
 */
#ifndef BPFSIGHT_CUDA_H
#define BPFSIGHT_CUDA_H

#include "family.h"
#include "cuda_records.h"
#include "report.h"
#include "steps.h"
#include <stddef.h>
#include "ucall_api.h"

/* ucall_api.group of a cuda API. */
enum cuda_group {
	CUDA_GRP_OTHER = 0,
	CUDA_GRP_LAUNCH, /* kernel and host-function launches */
	CUDA_GRP_GRAPH,	 /* graph launch, instantiate, stream capture */
	CUDA_GRP_MEMCPY,
	CUDA_GRP_MEMSET,
	CUDA_GRP_ALLOC, /* malloc-like: device, host, managed, async, pool */
	CUDA_GRP_FREE,
	CUDA_GRP_SYNC,	   /* synchronize, wait, query, event record */
	CUDA_GRP_PROFILER, /* cudaProfilerStart/Stop, cuProfilerStart/Stop */
	CUDA_GRP_MODULE,   /* functions that name handles (cuModuleGetFunction, ...) */
};

/* ucall_api.flags of a cuda API. */
#define CUDA_F_DRIVER	      0x0001 /* libcuda (cu*); else libcudart (cuda*) */
#define CUDA_F_PROFILER_START 0x0002 /* opens a --capture-range=cudaProfilerApi range */
#define CUDA_F_PROFILER_STOP  0x0004 /* closes it */
/* out (the handle the call returned) is named by the NUL-terminated deref string. */
#define CUDA_F_NAMES_OUT 0x0008
/* out is another handle for the function its fn field names (name:fn). */
#define CUDA_F_ALIAS_OUT 0x0010
/* A runtime launch: the driver launch it makes is its own work (one probe pair per launch). */
#define CUDA_F_RT_LAUNCH 0x0020
/* A driver launch: recorded only when not made by a runtime launch (cuBLAS's direct ones). */
#define CUDA_F_DRV_LAUNCH 0x0040

extern const struct ucall_table cuda_table; /* cuda_api.c */
extern const struct rec_decoder cuda_decoders[];
extern const struct report *const cuda_reports[];
extern const struct family_export cuda_export; /* cuda_export.c */
extern const struct family_sql cuda_sql;       /* cuda_sql.c */
/* nsys's ENUM_NSYS_EVENT_CLASS of CUDA calls, and their table (the gpu family adds rows). */
#define CUDA_RUNTIME_CLASS 0 /* TRACE_PROCESS_EVENT_CUDA_RUNTIME */
#define CUDA_DRIVER_CLASS  1 /* TRACE_PROCESS_EVENT_CUDA_DRIVER */
struct ex_table;
extern const struct ex_table cuda_runtime_table; /* cuda_export.c */
extern const struct page_family cuda_page;	 /* cuda_page.c */
extern const struct family family_cuda;
extern const struct report cuda_callsites; /* callsites_report.c: CUDA and NCCL calls */

extern const struct metrics_family cuda_metrics; /* cuda_metrics.c */
extern const struct family_verdict cuda_verdict; /* cuda_verdict.c */
extern const struct top_family cuda_top;	 /* cuda_top.c */

/* Its sources of steps for the per-step reports (cuda_step_src.c). */
extern const struct family_steps cuda_step_sources[];

struct family_ledger;
extern const struct family_ledger cuda_ledger; /* cuda_ledger.c: the ledger's feed */
#endif					       /* BPFSIGHT_CUDA_H */
