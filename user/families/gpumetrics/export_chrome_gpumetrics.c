// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family in the Chrome export, Kineto's way of drawing GPUs: each device's
 * metrics are counters ("ph":"C", cat "gpu_metrics") on pid = the device, the process Kineto
 * gives a GPU's kernels ("GPU N"), one counter per metric named with its unit ("SM Active
 * (%)", "Power (W)"; a running total as its rate, "Energy (W)"), written where it changes; a
 * device found or lost is an instant there. A process's use of a GPU (NVML's accounting) is
 * counters on the process: "GPU N SM (%)", "GPU N memory". Memory: a few words per device and
 * metric.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_chrome.h"
#include "gpumetrics.h"

struct chrome_gpum_dev {
	int seen;
	__u64 has; /* metrics written, whose last value is in last */
	double last[GPUM_NMETRICS];
	double prev[GPUM_NMETRICS]; /* running totals: the previous sample */
	__u64 prev_ts[GPUM_NMETRICS];
	__u64 has_prev;
};

struct chrome_gpum {
	struct chrome_gpum_dev dev[GPUM_MAX_DEVICES];
};

static int gpum_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = calloc(1, sizeof(struct chrome_gpum));
	return *st ? 0 : -ENOMEM;
}

static void counter(struct chrome *c, __u32 pid, const char *name, __u64 ts, const char *key,
		    double v)
{
	chrome_begin(c, 'C', "gpu_metrics", name, pid, 0);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ts);
	fprintf(c->f, ",\"args\":{\"%s\":%.17g}}", key, v);
}

static void sample(struct chrome *c, struct chrome_gpum_dev *d, __u32 dev, const struct bs_hdr *rec,
		   __u64 have, const __u64 *val)
{
	for (unsigned k = 0; k < GPUM_NMETRICS; k++) {
		const struct gpum_metric_info *mi = &gpum_metrics[k];
		double v;
		char name[64];

		if (!(have & GPUM_BIT(k)))
			continue;
		v = gpum_value(k, val[k]);
		if (mi->kind == GPUM_K_COUNTER) {
			double raw = v;
			int ok = (d->has_prev & GPUM_BIT(k)) && rec->ts > d->prev_ts[k] &&
				 raw >= d->prev[k];

			v = ok ? (raw - d->prev[k]) * mi->scale * 1e9 /
					    (double)(rec->ts - d->prev_ts[k])
			       : 0;
			d->prev[k] = raw;
			d->prev_ts[k] = rec->ts;
			d->has_prev |= GPUM_BIT(k);
			if (!ok)
				continue;
		} else if (mi->kind != GPUM_K_BITS) {
			v *= mi->scale;
		}
		if ((d->has & GPUM_BIT(k)) && d->last[k] == v)
			continue;
		d->has |= GPUM_BIT(k);
		d->last[k] = v;
		snprintf(name, sizeof(name), "%s (%s)", mi->title,
			 mi->kind == GPUM_K_COUNTER ? (!strcmp(mi->unit, "J") ? "W" : "B/s")
			 : mi->kind == GPUM_K_BITS  ? "bits"
						    : mi->unit);
		counter(c, dev, name, rec->ts, "value", v);
	}
}

static int gpum_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	struct chrome_gpum *g = st;
	const struct bs_gpum_proc *p = (const void *)rec;
	const struct bs_gpum_device *d = (const void *)rec;
	__u64 have, val[GPUM_NMETRICS];
	char name[48];
	__u32 dev;

	switch (rec->type) {
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
		if (!gpum_sample__read(gpum_walk__of(m), rec, &dev, &have, val)) {
			g->dev[dev].seen = 1;
			sample(c, &g->dev[dev], dev, rec, have, val);
		}
		break;
	case BS_REC_GPUM_PROC:
		if (p->have & BS_GPUM_PROC_SM) {
			snprintf(name, sizeof(name), "GPU %u SM (%%)", p->device);
			counter(c, rec->pid, name, rec->ts, "value", p->sm_util);
		}
		if (p->have & BS_GPUM_PROC_USED) {
			snprintf(name, sizeof(name), "GPU %u memory", p->device);
			counter(c, rec->pid, name, rec->ts, "bytes", (double)p->used_mem);
		}
		break;
	case BS_REC_GPUM_DEVICE:
		if (d->device >= GPUM_MAX_DEVICES)
			return 0;
		g->dev[d->device].seen = 1;
		chrome_begin(c, 'i', "gpu_metrics",
			     d->flags & BS_GPUM_DEV_LOST ? "GPU lost" : ev->kind, d->device, 0);
		fputs(",\"ts\":", c->f);
		chrome_us(c->f, rec->ts);
		fputs(",\"s\":\"p\"", c->f);
		chrome_plain_args(c, ev);
		fputs("}", c->f);
		break;
	default:
		return 0;
	}
	return ferror(c->f) ? chrome_err(c) : 1;
}

/* "GPU N", as Kineto names a GPU's pid (the gpu family's kernels say it too). */
static void gpum_names(struct chrome *c, void *st)
{
	struct chrome_gpum *g = st;
	char name[32];

	for (__u32 d = 0; d < GPUM_MAX_DEVICES; d++)
		if (g->dev[d].seen) {
			snprintf(name, sizeof(name), "GPU %u", d);
			chrome_meta_event(c, "process_name", d, 0, name, 0);
		}
}

const struct chrome_family gpum_chrome = {
	.open = gpum_open,
	.free = free,
	.draw = gpum_draw,
	.names = gpum_names,
};
