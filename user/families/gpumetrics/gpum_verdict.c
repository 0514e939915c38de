// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpumetrics's rules for stats' verdict (verdict.h), from gpu_metrics_sum's state: a GPU busy
 * (GPM's GR active, else NVML's utilization, at least GPUM_BUSY %) whose DRAM bandwidth ran at
 * GPUM_DRAM_BOUND % of its peak or more while fewer than GPUM_SM_LOW % of its SMs were active
 * is memory-bound (its kernels wait on memory, not on math); a GPU whose clocks were held
 * down (power or thermal caps, slowdowns) GPUM_THROTTLE_SAY of the time or more is said, with
 * why. Each cites gpu_metrics_sum.
 */
#include <stdio.h>
#include "gpum_report.h"
#include "verdict.h"

#define GPUM_BUSY	  50.0 /* % */
#define GPUM_THROTTLE_SAY 0.05 /* of the time sampled */

static double mean(const struct gpum_acc *a)
{
	return a->n ? a->sum / (double)a->n : -1;
}

static void claim_memory(struct verdict *v, const struct gpum_sum_dev *d, const char *gpu)
{
	double busy = mean(&d->acc[GPUM_GR_ACTIVE]), dram = mean(&d->acc[GPUM_DRAM_ACTIVE]),
	       sm = mean(&d->acc[GPUM_SM_ACTIVE]);

	if (busy < 0)
		busy = mean(&d->acc[GPUM_GPU_UTIL]);
	if (dram < 0 || sm < 0 || busy < GPUM_BUSY)
		return;
	if (dram >= GPUM_DRAM_BOUND && sm < GPUM_SM_LOW)
		verdict__claim(v, VERDICT_GPU, 1, busy / 100, "gpu_metrics_sum",
			       "%s is memory-bound: busy %.0f%% of the time, its DRAM bandwidth at "
			       "%.0f%% of its peak while only %.0f%% of its SMs were active",
			       gpu, busy, dram, sm);
}

static void claim_throttle(struct verdict *v, const struct gpum_sum_dev *d, const char *gpu)
{
	double share = d->thr_covered ? (double)d->thr_any_ns / (double)d->thr_covered : 0;
	unsigned top = GPUM_THROTTLE_BITS;

	if (share < GPUM_THROTTLE_SAY)
		return;
	for (unsigned b = 0; b < GPUM_THROTTLE_BITS; b++)
		if (((1ull << b) & GPUM_THROTTLE_SLOWING) &&
		    (top == GPUM_THROTTLE_BITS || d->thr_ns[b] > d->thr_ns[top]))
			top = b;
	verdict__claim(v, VERDICT_GPU, 0, share, "gpu_metrics_sum",
		       "%s was throttled %.0f%% of the time: its clocks held down, mostly by %s",
		       gpu, 100 * share, gpum_throttle_name(top) ? gpum_throttle_name(top) : "?");
}

static void gpum_claims(void *st, struct verdict *v)
{
	const struct gpum_sum *s = verdict__state(v, "gpu_metrics_sum");
	const struct gpum_walk *w = gpum_walk__of(verdict__model(v));
	char gpu[GPUM_NAME_LEN + 32];

	if (!s || s->err)
		return;
	for (__u32 dev = 0; dev < GPUM_MAX_DEVICES; dev++) {
		if (!s->dev[dev].samples)
			continue;
		gpum_device_name(w, dev, 1, gpu, sizeof(gpu));
		claim_memory(v, &s->dev[dev], gpu);
		claim_throttle(v, &s->dev[dev], gpu);
	}
}

const struct family_verdict gpum_verdict = {
	.claims = gpum_claims,
};
