// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpumetrics's rules for stats' verdict (verdict.h), from gpu_metrics_sum's state: a GPU busy
 * (GPM's GR active, else NVML's utilization, at least GPUM_BUSY %) whose DRAM bandwidth ran at
 * GPUM_DRAM_BOUND % of its peak or more while fewer than GPUM_SM_LOW % of its SMs were active
 * is memory-bound (its kernels wait on memory, not on math); a GPU whose clocks were held
 * down (power or thermal caps, slowdowns) GPUM_THROTTLE_SAY of the time or more is said, with
 * why. Each cites gpu_metrics_sum.
 *
 * From a server (stats --from) the same numbers come as one row per device (gpum_sql.c's
 * gpum_devices): the four metrics' counts and sums, the throttle reasons' times, its model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpum_report.h"
#include "table.h"
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

/* A device's row of the server's table as the state's numbers the rules read, and its name. */
static void dev_of_row(const struct table *t, int r, struct gpum_sum_dev *d, char *gpu, size_t len)
{
	static const struct {
		unsigned k;
		const char *n, *sum;
	} metrics[] = {
		{ GPUM_GR_ACTIVE, "gr_n", "gr_sum" },
		{ GPUM_GPU_UTIL, "util_n", "util_sum" },
		{ GPUM_DRAM_ACTIVE, "dram_n", "dram_sum" },
		{ GPUM_SM_ACTIVE, "sm_n", "sm_sum" },
	};
	__u32 dev = (__u32)table__get_u64(t, r, table__col(t, "device"));
	const char *model = table__get_str(t, r, table__col(t, "model"));
	char key[16];

	memset(d, 0, sizeof(*d));
	d->samples = table__get_u64(t, r, table__col(t, "samples"));
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		d->acc[metrics[i].k].n = table__get_u64(t, r, table__col(t, metrics[i].n));
		d->acc[metrics[i].k].sum = table__get_number(t, r, table__col(t, metrics[i].sum));
	}
	d->thr_covered = table__get_u64(t, r, table__col(t, "covered_ns"));
	d->thr_any_ns = table__get_u64(t, r, table__col(t, "slowed_ns"));
	for (unsigned b = 0; b < GPUM_THROTTLE_BITS; b++) {
		snprintf(key, sizeof(key), "thr%u_ns", b);
		d->thr_ns[b] = table__get_u64(t, r, table__col(t, key));
	}
	/* gpum_device_name's words */
	if (model && *model)
		snprintf(gpu, len, "GPU %u (%.*s)", dev, GPUM_NAME_LEN, model);
	else
		snprintf(gpu, len, "GPU %u", dev);
}

static void gpum_claims(void *st, struct verdict *v)
{
	const struct table *from = *(const struct table **)st;
	const struct gpum_sum *s = verdict__state(v, "gpu_metrics_sum");
	const struct gpum_walk *w = gpum_walk__of(verdict__model(v));
	char gpu[GPUM_NAME_LEN + 32];
	struct gpum_sum_dev d;

	for (int r = 0; from && r < table__nrows(from); r++) {
		dev_of_row(from, r, &d, gpu, sizeof(gpu));
		if (!d.samples)
			continue;
		claim_memory(v, &d, gpu);
		claim_throttle(v, &d, gpu);
	}
	if (from || !s || s->err)
		return;
	for (__u32 dev = 0; dev < GPUM_MAX_DEVICES; dev++) {
		if (!s->dev[dev].samples)
			continue;
		gpum_device_name(w, dev, 1, gpu, sizeof(gpu));
		claim_memory(v, &s->dev[dev], gpu);
		claim_throttle(v, &s->dev[dev], gpu);
	}
}

/* The server's table, kept for the claims: the state is a pointer to it. */
static void *gpum_new(void)
{
	return calloc(1, sizeof(const struct table *));
}

static void gpum_free(void *st)
{
	free(st);
}

static int gpum_load(void *st, const char *name, const struct table *t)
{
	(void)name;
	*(const struct table **)st = t;
	return 0;
}

const struct family_verdict gpum_verdict = {
	.new = gpum_new,
	.claims = gpum_claims,
	.free = gpum_free,
	.reads = "gpum_devices",
	.load = gpum_load,
};
