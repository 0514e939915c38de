// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's metrics, per device: kernels, their summed time, and the time at least one
 * ran (the union of their intervals: busy_union.h), whose rate is the device's utilization;
 * and, for the node, GPU ops by how the launch join linked them (a join that stops linking
 * shows here first).
 */
#include <errno.h>
#include <stdlib.h>
#include "busy_union.h"
#include "gpu.h"
#include "metrics_family.h"
#include "hmap.h"

struct gpu_device {
	__u64 count, total_ns;
	struct busy_union busy;
};

enum { LINK_CUDA, LINK_API, LINK_NONE, NLINKS };

struct gpu_metrics {
	struct hmap *devices; /* {device, 0} -> gpu_device */
	__u64 ops[NLINKS];    /* kernels, copies and memsets by link */
};

static int gpu_metrics_open(const struct record_opts *o, void **st)
{
	struct gpu_metrics *gm = calloc(1, sizeof(*gm));

	if (gm && !(gm->devices = hmap__new(sizeof(struct gpu_device)))) {
		free(gm);
		gm = NULL;
	}
	*st = gm;
	return gm ? 0 : -ENOMEM;
}

static void gpu_metrics_free(void *st)
{
	struct gpu_metrics *gm = st;
	struct gpu_device *g;
	size_t it = 0;

	while ((g = hmap__next(gm->devices, &it, NULL)))
		busy_union__free(&g->busy);
	hmap__free(gm->devices);
	free(gm);
}

static void count_link(struct gpu_metrics *gm, __u16 flags)
{
	gm->ops[flags & BS_GPU_CALL_CUDA  ? LINK_CUDA
		: flags & BS_GPU_CALL_API ? LINK_API
					  : LINK_NONE]++;
}

static void gpu_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	const struct bs_gpu_kernel *k = (const void *)h;
	struct gpu_metrics *gm = st;
	struct gpu_device *g;

	if (h->type == BS_REC_GPU_MEMCPY && h->size >= sizeof(struct bs_gpu_memcpy))
		count_link(gm, ((const struct bs_gpu_memcpy *)h)->flags);
	else if (h->type == BS_REC_GPU_MEMSET && h->size >= sizeof(struct bs_gpu_memset))
		count_link(gm, ((const struct bs_gpu_memset *)h)->flags);
	if (h->type != BS_REC_GPU_KERNEL || h->size < sizeof(*k))
		return;
	count_link(gm, k->flags);
	if (!(g = hmap__get(gm->devices, (struct hkey){ k->device, 0 }, 1)))
		return;
	g->count++;
	g->total_ns += k->dur;
	busy_union__add(&g->busy, h->ts, h->ts + k->dur);
}

static void gpu_metrics_render(FILE *f, void *gms, const struct metrics_owner *ow, size_t n)
{
	static const char *const links[NLINKS] = { "cuda", "api", "none" };
	const struct gpu_metrics *gm = gms;
	struct hmap *st = gm->devices;
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
	metrics__head(f, "bpfsight_gpu_ops_total", "counter",
		      "GPU kernels, copies and memsets by how they were linked to their launch: "
		      "cuda (the traced cuda call), api (CUPTI's API record only), none.");
	for (int i = 0; i < NLINKS; i++)
		fprintf(f, "bpfsight_gpu_ops_total{link=\"%s\"} %llu\n", links[i],
			(unsigned long long)gm->ops[i]);
}

const struct metrics_family gpu_metrics = {
	.open = gpu_metrics_open,
	.free = gpu_metrics_free,
	.record = gpu_metrics_record,
	.render = gpu_metrics_render,
};
