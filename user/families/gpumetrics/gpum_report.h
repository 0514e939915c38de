/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gpumetrics family's reports (gpu_metrics_sum, gpu_metrics_step_sum) and what the verdict
 * and the page read of their state.
 */
#ifndef BPFSIGHT_GPUM_REPORT_H
#define BPFSIGHT_GPUM_REPORT_H

#include "gpumetrics.h"
#include "gpum_series.h"

struct hmap;

/* Samples further apart than this are not one stretch of time (a device lost and back). */
#define GPUM_SUM_GAP_NS	   2000000000ull
#define GPUM_THROTTLE_BITS 9

/* One metric of one device over the recording. */
struct gpum_acc {
	__u64 n;
	double sum, min, max;
	struct hmap *dist; /* value kept to 5 digits (its bits) -> samples */
	/* a running total: its previous sample, and its increase over the recording */
	double prev, total;
	__u64 prev_ts;
	int has_prev;
};

struct gpum_sum_dev {
	__u64 samples, first_ts, last_ts;
	struct gpum_acc acc[GPUM_NMETRICS];
	/* throttling: each sample's reasons held until the next sample */
	__u64 thr_ns[GPUM_THROTTLE_BITS], thr_any_ns, thr_covered, thr_seen;
	__u64 thr_ts, thr_bits;
	int thr_has;
};

struct gpum_sum {
	struct gpum_sum_dev dev[GPUM_MAX_DEVICES];
	int ndev, err;
};

extern const struct report gpum_sum_report;  /* gpum_sum_report.c */
extern const struct report gpum_step_report; /* gpum_step_report.c */

/* Thresholds of "bound by" (gpu_metrics_step_sum, the verdict): docs/GPU-METRICS.md. */
#define GPUM_DRAM_BOUND	  60.0 /* % of peak DRAM bandwidth: memory-bound */
#define GPUM_SM_LOW	  50.0 /* % SM active under which a memory-bound GPU is starved */
#define GPUM_TENSOR_BOUND 40.0 /* % tensor active: compute-bound (tensor cores) */
#define GPUM_SM_BOUND	  80.0 /* % SM active with DRAM under its bound: compute-bound */

/* "memory", "compute" or NULL (neither) for a span's means (-1: not measured). */
const char *gpum_bound(double sm, double tensor, double dram);

#endif /* BPFSIGHT_GPUM_REPORT_H */
