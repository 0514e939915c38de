/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nvtx family: NVTX ranges, marks and names, recorded by the cupti-shim acting as the NVTX
 * injection library (NVTX_INJECTION64_PATH) and sent through its USDT channel
 * (user/shim_channel/shim_link.c). Record side in nvtx.c, what it tells the channel in
 * nvtx_unpack.c; decoders in nvtx_decode.c, reports in nvtx_report.c, its ranges as steps of
 * the per-step reports (--steps=nvtx:NAME) in nvtx_step_src.c. docs/NVTX.md for users.
 */
#ifndef BPFSIGHT_NVTX_H
#define BPFSIGHT_NVTX_H

#include "family.h"
#include "nvtx_records.h"
#include "report.h"
#include "steps.h"

extern const struct rec_decoder nvtx_decoders[];			 /* nvtx_decode.c */
void nvtx_name_observe(struct trace_model *m, const struct bs_hdr *rec); /* nvtx_decode.c */
extern const struct report *const nvtx_reports[];			 /* nvtx_report.c */
extern const struct family_export nvtx_export;				 /* nvtx_export.c */
extern const struct page_family nvtx_page;				 /* nvtx_page.c */
extern const struct family family_nvtx;					 /* nvtx.c */
extern const struct family_shim nvtx_shim;				 /* nvtx_unpack.c */

/* Its sources of steps for the per-step reports (nvtx_step_src.c). */
extern const struct family_steps nvtx_step_sources[];

#endif /* BPFSIGHT_NVTX_H */
