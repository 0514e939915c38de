// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family's columns in `bpfsight top` (with --gpu-metrics-devices or -t
 * gpumetrics): SM%, the share of a GPU's SMs' time a process used, from NVML's per-process
 * accounting (each of its samples over the time since the process's previous one on that GPU;
 * a process on two GPUs can pass 100%); W, the power drawn now by the GPUs the process runs on
 * (NVML names it on them: a GPU two processes share counts in both). NVML's process samples
 * come every 1/6 s and reach top within a second: the columns lag by that much.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "gpumetrics.h"
#include "hmap.h"
#include "top_family.h"

enum { COL_SM, COL_W };

static const struct top_column gpum_columns[] = {
	[COL_SM] = { "sm", "SM%", "share of a GPU's SM time the process used (NVML, gpumetrics)",
		     TOP_SHARE, 0, 5 },
	[COL_W] = { "gpu_w", "W", "power drawn now by the GPUs the process runs on (gpumetrics)",
		    TOP_VALUE, 0, 5 },
	{ 0 },
};

struct gpum_top {
	struct gpum_walk w;
	double power_w[GPUM_MAX_DEVICES]; /* each device's latest */
	struct hmap *procs;		  /* {pid, device} -> struct proc_on */
};

struct proc_on {
	__u64 last_ts; /* its previous utilization sample on the device */
};

static int gpum_top_open(const struct record_opts *o, void **st)
{
	struct gpum_top *g = calloc(1, sizeof(*g));

	*st = g;
	if (!g || !(g->procs = hmap__new(sizeof(struct proc_on))))
		return -ENOMEM;
	return 0;
}

static void gpum_top_free(void *st)
{
	struct gpum_top *g = st;

	if (g)
		hmap__free(g->procs);
	free(g);
}

/* The power of the devices PID runs on, into its W column. */
static void set_power(struct top *t, struct gpum_top *g, __u32 pid)
{
	struct hkey k;
	double w = 0;
	size_t it = 0;

	while (hmap__next(g->procs, &it, &k))
		if (k.a == pid && k.b < GPUM_MAX_DEVICES)
			w += g->power_w[k.b];
	top__set(t, &family_gpumetrics, COL_W, pid, (__u64)(w + 0.5));
}

static void gpum_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	struct gpum_top *g = st;
	const struct bs_gpum_proc *p = (const void *)h;
	__u64 have, val[GPUM_NMETRICS];
	struct proc_on *on;
	struct hkey k;
	size_t it = 0;
	__u32 dev;

	gpum_walk__observe(&g->w, h);
	switch (h->type) {
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
		if (gpum_sample__read(&g->w, h, &dev, &have, val) || !(have & GPUM_BIT(GPUM_POWER)))
			return;
		g->power_w[dev] = (double)val[GPUM_POWER] / 1000.0;
		while (hmap__next(g->procs, &it, &k))
			if (k.b == dev)
				set_power(t, g, (__u32)k.a);
		break;
	case BS_REC_GPUM_PROC:
		if (h->size < sizeof(*p) || !h->pid || p->device >= GPUM_MAX_DEVICES ||
		    !(on = hmap__get(g->procs, (struct hkey){ h->pid, p->device }, 1)))
			return;
		if ((p->have & BS_GPUM_PROC_SM) && on->last_ts && h->ts > on->last_ts)
			top__add(t, &family_gpumetrics, COL_SM, h->pid, 0,
				 (h->ts - on->last_ts) * p->sm_util / 100);
		if (p->have & BS_GPUM_PROC_SM)
			on->last_ts = h->ts;
		set_power(t, g, h->pid);
		break;
	case BS_REC_EXIT:
		if (h->size >= sizeof(struct bs_exit) && ((const struct bs_exit *)h)->group_dead)
			hmap__del_all(g->procs, 0, h->pid);
		break;
	}
}

const struct top_family gpum_top = {
	.columns = gpum_columns,
	.open = gpum_top_open,
	.free = gpum_top_free,
	.record = gpum_top_record,
};
