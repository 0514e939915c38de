// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family in the Perfetto export (docs/EXPORT.md, "GPU metrics"): per device a
 * root track "GPU N metrics (MODEL)", beside the GPU work's tracks, holding a counter track per
 * metric it has ("SM Active (%)", "Power (W)"...), in the unit people read: a running total
 * (energy, PCIe and NVLink bytes) as its rate between samples ("Energy (W)", "PCIe TX (B/s)"),
 * the throttle reasons as their bits. A value is written where it changes; a metric the
 * device lacks has no track. The device's own events (found, lost) are instants on its root
 * track. Per process, "GPU N SM (%)" and "GPU N memory" counters from NVML's accounting.
 * Memory: a few words per device and metric, per process and device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto.h"
#include "gpumetrics.h"
#include "hmap.h"

struct pf_gpum_ctr {
	__u64 uuid; /* 0: not described yet */
	double last;
	/* a running total: its previous sample */
	double prev;
	__u64 prev_ts;
	int has_prev;
};

struct pf_gpum_dev {
	__u64 root;
	struct pf_gpum_ctr ctr[GPUM_NMETRICS];
};

struct pf_gpum {
	struct pf_gpum_dev dev[GPUM_MAX_DEVICES];
	struct hmap *procs; /* {pid, device << 8 | what} -> pf_gpum_ctr */
};

static int gpum_open(struct pf *pf, void **st)
{
	struct pf_gpum *g = calloc(1, sizeof(*g));

	*st = g;
	if (!g || !(g->procs = hmap__new(sizeof(struct pf_gpum_ctr))))
		return -ENOMEM;
	return 0;
}

static void gpum_free(void *st)
{
	struct pf_gpum *g = st;

	if (g)
		hmap__free(g->procs);
	free(g);
}

/* Device DEV's root track, described the first time. */
static int root(struct pf *pf, struct pf_gpum *g, __u32 dev, __u64 ts, __u64 *uuid)
{
	const struct gpum_walk *w = gpum_walk__of(pf->model);
	char name[GPUM_NAME_LEN + 32];
	int err;

	if (!g->dev[dev].root) {
		g->dev[dev].root = pf->next_uuid++;
		snprintf(name, sizeof(name), "GPU %u metrics", dev);
		if (w && w->dev[dev].known && w->dev[dev].info.name[0])
			snprintf(name + strlen(name), sizeof(name) - strlen(name), " (%.*s)",
				 GPUM_NAME_LEN, w->dev[dev].info.name);
		err = pf__describe_named(pf, ts, g->dev[dev].root, 0, name,
					 "NVML's and GPM's metrics of this GPU, sampled by the "
					 "gpumetrics family (docs/GPU-METRICS.md)");
		if (err)
			return err;
	}
	*uuid = g->dev[dev].root;
	return 0;
}

static int gpum_track(struct pf *pf, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m, __u64 *track)
{
	const struct bs_gpum_device *d = (const void *)rec;
	int err;

	switch (rec->type) {
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
	case BS_REC_GPUM_PROC:
		return PF_FAMILY_DRAWN; /* counters, by the observe hook */
	case BS_REC_GPUM_DEVICE:
		if (d->device >= GPUM_MAX_DEVICES)
			return 0;
		err = root(pf, st, d->device, rec->ts, track);
		return err ? err : 1;
	default:
		return 0;
	}
}

/* Counter C named NAME under PARENT at TS: V, written when it changed. */
static int ctr_set(struct pf *pf, struct pf_gpum_ctr *c, __u64 parent, const char *name,
		   const char *desc, __u32 unit, __u64 ts, double v)
{
	int err;

	if (c->uuid && c->last == v)
		return 0;
	if (!c->uuid) {
		c->uuid = pf->next_uuid++;
		err = pf__describe_counter(pf, ts, c->uuid, parent, name, desc, unit);
		if (err)
			return err;
	}
	c->last = v;
	return pf__counter(pf, ts, c->uuid, 0, &v);
}

static int metric(struct pf *pf, struct pf_gpum_dev *d, unsigned k, __u64 ts, __u64 raw)
{
	const struct gpum_metric_info *mi = &gpum_metrics[k];
	struct pf_gpum_ctr *c = &d->ctr[k];
	double v = gpum_value(k, raw);
	int counter = mi->kind == GPUM_K_COUNTER;
	char name[64];
	double rate;

	snprintf(name, sizeof(name), "%s (%s)", mi->title,
		 counter		   ? (!strcmp(mi->unit, "J") ? "W" : "B/s")
		 : mi->kind == GPUM_K_BITS ? "bits"
					   : mi->unit);
	if (!counter)
		return ctr_set(pf, c, d->root, name, mi->desc,
			       !strcmp(mi->unit, "B") ? CD_UNIT_BYTES : 0, ts,
			       mi->kind == GPUM_K_BITS ? v : v * mi->scale);
	/* A running total: its rate since its previous sample (none for the first). */
	if (c->has_prev && ts > c->prev_ts && v >= c->prev) {
		rate = (v - c->prev) * mi->scale * 1e9 / (double)(ts - c->prev_ts);
		c->prev = v;
		c->prev_ts = ts;
		return ctr_set(pf, c, d->root, name, mi->desc, 0, ts, rate);
	}
	c->prev = v;
	c->prev_ts = ts;
	c->has_prev = 1;
	return 0;
}

static int proc_ctr(struct pf *pf, struct pf_gpum *g, const struct bs_gpum_proc *p, int what,
		    double v)
{
	struct pf_gpum_ctr *c = hmap__get(
		g->procs, (struct hkey){ p->h.pid, (__u64)p->device << 8 | (__u64)what }, 1);
	char name[48];
	__u64 proc;
	int err;

	if (!c)
		return -ENOMEM;
	err = pf__process_track(pf, p->h.pid, p->h.ts, pf->model, &proc);
	if (err)
		return err;
	snprintf(name, sizeof(name), what ? "GPU %u memory" : "GPU %u SM (%%)", p->device);
	return ctr_set(pf, c, proc, name,
		       what ? "Device memory this process holds on the GPU (NVML)"
			    : "Share of the GPU's SM time this process used (NVML's accounting)",
		       what ? CD_UNIT_BYTES : 0, p->h.ts, v);
}

static int gpum_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	struct pf_gpum *g = st;
	const struct bs_gpum_proc *p = (const void *)rec;
	__u64 have, val[GPUM_NMETRICS], uuid;
	__u32 dev;
	int err = 0;

	if (rec->type == BS_REC_GPUM_PROC) {
		if (rec->size < sizeof(*p) || !rec->pid)
			return 0;
		if (p->have & BS_GPUM_PROC_SM)
			err = proc_ctr(pf, g, p, 0, p->sm_util);
		if (!err && (p->have & BS_GPUM_PROC_USED))
			err = proc_ctr(pf, g, p, 1, (double)p->used_mem);
		return err;
	}
	if ((rec->type != BS_REC_GPUM_KEY && rec->type != BS_REC_GPUM_SAMPLE) ||
	    gpum_sample__read(gpum_walk__of(pf->model), rec, &dev, &have, val))
		return 0;
	if ((err = root(pf, g, dev, rec->ts, &uuid)))
		return err;
	for (unsigned k = 0; k < GPUM_NMETRICS && !err; k++)
		if (have & GPUM_BIT(k))
			err = metric(pf, &g->dev[dev], k, rec->ts, val[k]);
	return err;
}

const struct perfetto_family gpum_perfetto = {
	.open = gpum_open,
	.free = gpum_free,
	.track = gpum_track,
	.observe = gpum_observe,
};
