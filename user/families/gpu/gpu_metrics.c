// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's metrics, per device: kernels, their summed time, and the time at least one
 * ran (the union of their intervals: busy_union.h), whose rate is the device's utilization.
 */
#include <errno.h>
#include <stdlib.h>
#include "busy_union.h"
#include "gpu.h"
#include "metrics_family.h"

struct gpu_device {
	__u64 count, total_ns;
	struct busy_union busy;
};

static int gpu_metrics_open(const struct record_opts *o, void **st)
{
	*st = hmap__new(sizeof(struct gpu_device)); /* {device, 0} -> gpu_device */
	return *st ? 0 : -ENOMEM;
}

static void gpu_metrics_free(void *st)
{
	struct gpu_device *g;
	size_t it = 0;

	while ((g = hmap__next(st, &it, NULL)))
		busy_union__free(&g->busy);
	hmap__free(st);
}

static void gpu_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	const struct bs_gpu_kernel *k = (const void *)h;
	struct gpu_device *g;

	if (h->type != BS_REC_GPU_KERNEL || !(g = hmap__get(st, (struct hkey){ k->device, 0 }, 1)))
		return;
	g->count++;
	g->total_ns += k->dur;
	busy_union__add(&g->busy, h->ts, h->ts + k->dur);
}

static void gpu_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	const struct gpu_device *g;
	struct hkey k;
	size_t it;

	metrics__head(f, "bpfsight_gpu_kernel_seconds_total", "counter",
		      "GPU kernel execution time by device, as CUPTI timed it (cupti-shim); "
		      "concurrent kernels each count.");
	for (it = 0; (g = hmap__next(st, &it, &k));)
		fprintf(f, "bpfsight_gpu_kernel_seconds_total{device=\"%llu\"} %.9f\n",
			(unsigned long long)k.a, g->total_ns / 1e9);
	metrics__head(f, "bpfsight_gpu_busy_seconds_total", "counter",
		      "Time a GPU device ran at least one kernel (the union of its kernels' "
		      "intervals: concurrent kernels count once); its rate is the device's kernel "
		      "utilization.");
	for (it = 0; (g = hmap__next(st, &it, &k));)
		fprintf(f, "bpfsight_gpu_busy_seconds_total{device=\"%llu\"} %.9f\n",
			(unsigned long long)k.a, g->busy.busy_ns / 1e9);
	metrics__head(f, "bpfsight_gpu_kernels_total", "counter",
		      "GPU kernels executed, by device.");
	for (it = 0; (g = hmap__next(st, &it, &k));)
		fprintf(f, "bpfsight_gpu_kernels_total{device=\"%llu\"} %llu\n",
			(unsigned long long)k.a, (unsigned long long)g->count);
}

const struct metrics_family gpu_metrics = {
	.open = gpu_metrics_open,
	.free = gpu_metrics_free,
	.record = gpu_metrics_record,
	.render = gpu_metrics_render,
};
