/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A device's samples over time, kept so that any span's energy and mean activity can be read
 * back once the trace's steps are known (gpu_metrics_step_sum, the verdict): running totals
 * at checkpoints. The energy counter as NVML read it; and for each metric below the integral
 * of its samples (each sample's value over the time since the previous one: NVML's and GPM's
 * values describe the time before they were read) and the time it covers.
 *
 * A span's value is read between checkpoints by linear interpolation: exact at every
 * checkpoint, and every sample is one until a device has GPUM_SERIES_MAX of them; past that
 * every other checkpoint goes and only samples at least twice as far apart are kept, so the
 * memory stays bounded (GPUM_SERIES_MAX * 96 bytes per device) and the error within the
 * spacing of the checkpoints kept (docs/GPU-METRICS.md).
 */
#ifndef BPFSIGHT_GPUM_SERIES_H
#define BPFSIGHT_GPUM_SERIES_H

#include <stddef.h>
#include <linux/types.h>
#include "gpumetrics.h"

#define GPUM_SERIES_MAX (1u << 19)
/* Samples further apart than this are not one stretch: the time between is not covered. */
#define GPUM_SERIES_GAP_NS 2000000000ull

enum gpum_series_metric {
	GS_POWER,  /* mW */
	GS_SM,	   /* sm_active % (GPM) */
	GS_TENSOR, /* tensor_active % (GPM) */
	GS_DRAM,   /* dram_active % (GPM) */
	GS_UTIL,   /* gpu_util % (NVML) */
	GS_N,
};

struct gpum_point {
	__u64 ts;
	double energy; /* mJ, NVML's counter (NaN: none read yet) */
	double sum[GS_N], covered[GS_N];
};

struct gpum_series {
	struct gpum_point *p;
	size_t n, cap;
	__u64 spacing; /* ns at least between checkpoints kept (0: every sample) */
	int has_energy;
	/* the running totals up to the latest sample, and its time */
	struct gpum_point now;
	int started;
	/*
	 * When each metric was last read: a value covers the time since, which for GPM's (read
	 * every SAMPLER_GPM_NS, not every tick) is many ticks.
	 */
	__u64 last[GS_N];
	__u64 first; /* the first sample's time */
};

/* A sample of HAVE's metrics VAL at TS (in time order): 0, or -ENOMEM. */
int gpum_series__add(struct gpum_series *s, __u64 ts, __u64 have, const __u64 *val);
/* Over [A, B): energy in mJ (-1 when none was read) and each metric's mean (-1: not covered). */
struct gpum_span {
	double energy_mj, mean[GS_N];
	__u64 covered_ns; /* of the span, the time the energy counter's samples cover */
};
void gpum_series__span(const struct gpum_series *s, __u64 a, __u64 b, struct gpum_span *out);
void gpum_series__free(struct gpum_series *s);

#endif /* BPFSIGHT_GPUM_SERIES_H */
