/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gemm_step_sum's rows taken together (cublas_mfu.c), for the family's verdict rule
 * (cublas_verdict.c): the steps' MFU against the peak the report used.
 */
#ifndef BPFSIGHT_CUBLAS_MFU_H
#define BPFSIGHT_CUBLAS_MFU_H

#include <linux/types.h>

/* Filled when gemm_step_sum emits its table. */
struct gemm_mfu {
	int known;	   /* a peak: --peak-tflops, or the trace's GPU in the table of peaks */
	int by_step;	   /* the rows are steps (steps.h; else one row over the GEMMs' span) */
	char peak_of[256]; /* "the NVIDIA H100 80GB HBM3's bf16 peak (989.4 TFLOP/s)" */
	__u64 steps;	   /* rows with GEMMs and an MFU */
	__u64 step_ns;	   /* their time */
	double peak_ns;	   /* their GEMMs' time at the peak */
};

/* The summary from a server's answer (stats --from), and the processes it is of. */
struct gemm_mfu_from {
	int loaded;
	struct gemm_mfu sum;
	__u32 *pids;
	size_t npids, cap;
};

struct table;

/*
 * F from table T, cublas_step_gemms' rows (cublas_sql.c: a process's step and GEMM
 * type each, the steps in order): what the pass's emit sums. 0, or -EINVAL / -ENOMEM.
 */
int cublas_mfu__load(struct gemm_mfu_from *f, const struct table *t);
/* 1 when a step (or with no steps, a GEMM) of F is of process PID. */
int cublas_mfu__from_has_pid(const struct gemm_mfu_from *f, __u32 pid);

/* The summary of gemm_step_sum's state ST. */
const struct gemm_mfu *cublas_mfu__summary(const void *st);
/* 1 when a row of the summary is of process PID. */
int cublas_mfu__has_pid(const void *st, __u32 pid);

#endif /* BPFSIGHT_CUBLAS_MFU_H */
