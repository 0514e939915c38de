/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gpu family: GPU kernels, copies and memsets timed by CUPTI inside the application, through
 * the cupti-shim (cupti-shim/, loaded by CUDA_INJECTION64_PATH) and its USDT channel
 * (bpf/shim.bpf.c, user/shim_channel/shim_link.c). Record side in gpu.c, what it tells the
 * channel in gpu_unpack.c (the launch join: shim_join.h); decoders in gpu_decode.c, reports
 * in gpu_report.c (and the files it names). docs/GPU.md for users.
 */
#ifndef BPFSIGHT_GPU_H
#define BPFSIGHT_GPU_H

#include "family.h"
#include "gpu_graph_walk.h"
#include "gpu_records.h"
#include "report.h"

extern const struct rec_decoder gpu_decoders[];	 /* gpu_decode.c */
extern const struct report *const gpu_reports[]; /* gpu_report.c */
extern const struct family_verdict gpu_verdict;	 /* gpu_verdict.c */
extern const struct family_export gpu_export;	 /* gpu_export.c */
extern const struct family_sql gpu_sql;		 /* gpu_sql.c */
extern const struct family family_gpu;		 /* gpu.c */
extern const struct family_shim gpu_shim;	 /* gpu_unpack.c */
/* The launch join run again when a trace is read (shim_relink.c); its state a shim_relink. */
extern const struct family_reorder gpu_reorder;

extern const struct page_family gpu_page; /* gpu_page.c */

extern const struct metrics_family gpu_metrics; /* gpu_metrics.c */
extern const struct top_family gpu_top;		/* gpu_top.c */

#endif /* BPFSIGHT_GPU_H */
