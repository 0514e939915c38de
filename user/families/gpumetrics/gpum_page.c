// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family on the report's page, on the shared time axis: per device, its SM
 * activity (GPM's SM active where the device has it, else NVML's utilization) and the power
 * it drew; headline figures, each device's energy over the recording and its mean power.
 * Each sample's value covers the time since the device's previous sample (what NVML and GPM
 * describe), summed in the page's bins.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpumetrics.h"
#include "page.h"

#define BP 10000 /* a share in basis points: 100% */

struct gpum_page_dev {
	int seen, sm_gpm;
	__u64 prev_ts;
	struct time_bins sm, power;
	double energy_first, energy_last;
	__u64 energy_first_ts, energy_last_ts;
	int has_energy;
};

struct gpum_page {
	struct gpum_page_dev dev[GPUM_MAX_DEVICES];
	int n;
};

static int gpum_page_open(const struct page *p, void **st)
{
	*st = calloc(1, sizeof(struct gpum_page));
	return *st ? 0 : -ENOMEM;
}

static int gpum_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			    const struct trace_model *m)
{
	struct gpum_page *g = st;
	__u64 have, val[GPUM_NMETRICS], dt;
	struct gpum_page_dev *d;
	__u32 dev;
	int err = 0;

	if ((rec->type != BS_REC_GPUM_KEY && rec->type != BS_REC_GPUM_SAMPLE) ||
	    gpum_sample__read(gpum_walk__of(m), rec, &dev, &have, val))
		return 0;
	d = &g->dev[dev];
	if (!d->seen) {
		d->seen = 1;
		g->n++;
		page__bins_init(p, &d->sm);
		page__bins_init(p, &d->power);
	}
	if (have & GPUM_BIT(GPUM_ENERGY)) {
		if (!d->has_energy) {
			d->energy_first = (double)val[GPUM_ENERGY];
			d->energy_first_ts = rec->ts;
		}
		d->has_energy = 1;
		d->energy_last = (double)val[GPUM_ENERGY];
		d->energy_last_ts = rec->ts;
	}
	dt = d->prev_ts && rec->ts > d->prev_ts ? rec->ts - d->prev_ts : 0;
	if (dt && dt <= 2000000000ull) {
		if (have & GPUM_BIT(GPUM_SM_ACTIVE)) {
			d->sm_gpm = 1;
			err = time_bins__add_weighted(
				&d->sm, d->prev_ts, dt,
				(__u64)(gpum_value(GPUM_SM_ACTIVE, val[GPUM_SM_ACTIVE]) * 100 +
					0.5));
		} else if (!d->sm_gpm && (have & GPUM_BIT(GPUM_GPU_UTIL))) {
			err = time_bins__add_weighted(&d->sm, d->prev_ts, dt,
						      val[GPUM_GPU_UTIL] * 100);
		}
		if (!err && (have & GPUM_BIT(GPUM_POWER)))
			err = time_bins__add_weighted(&d->power, d->prev_ts, dt,
						      (val[GPUM_POWER] + 500) / 1000);
	}
	d->prev_ts = rec->ts;
	return err;
}

static void gpum_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct gpum_page *g = st;
	const struct gpum_walk *w = NULL;
	struct page_series sm[GPUM_MAX_DEVICES], pw[GPUM_MAX_DEVICES];
	int n = 0, gpm = 0;

	if (!g->n)
		return; /* no GPU metrics recorded: no panel */
	for (__u32 dev = 0; dev < GPUM_MAX_DEVICES; dev++) {
		struct gpum_page_dev *d = &g->dev[dev];

		if (!d->seen)
			continue;
		gpm |= d->sm_gpm;
		gpum_device_name(w, dev, 0, sm[n].label, sizeof(sm[n].label));
		snprintf(pw[n].label, sizeof(pw[n].label), "%s", sm[n].label);
		sm[n].bins = &d->sm;
		sm[n].total = page__total(&d->sm);
		pw[n].bins = &d->power;
		pw[n].total = page__total(&d->power);
		n++;
	}
	page__chart_scaled(p, f, "tl-gpum-sm", "GPU SM activity",
			   gpm ? "per device: share of its SMs busy (GPM's SM active; NVML's "
				 "utilization where a device has no GPM)"
			       : "per device: share of time a kernel ran (NVML's utilization)",
			   sm, n, BP, BP / 100.0, "%");
	page__chart(p, f, "tl-gpum-power", "GPU power", "per device: watts drawn (NVML)", pw, n, 0,
		    " W");
}

/* Each device's energy over the recording and its mean power (the first four devices). */
static void gpum_page_figures(const struct page *p, void *st, FILE *f)
{
	struct gpum_page *g = st;
	char label[48], value[48], exact[128];
	int shown = 0;

	for (__u32 dev = 0; dev < GPUM_MAX_DEVICES && shown < 4; dev++) {
		const struct gpum_page_dev *d = &g->dev[dev];
		double j, secs;

		if (!d->seen || !d->has_energy || d->energy_last_ts <= d->energy_first_ts)
			continue;
		j = (d->energy_last - d->energy_first) / 1000.0;
		secs = (double)(d->energy_last_ts - d->energy_first_ts) / 1e9;
		snprintf(label, sizeof(label), "GPU %u energy", dev);
		snprintf(value, sizeof(value), j >= 10000 ? "%.1f kJ" : "%.1f J",
			 j >= 10000 ? j / 1000 : j);
		snprintf(exact, sizeof(exact), "%.3f J over %.3f s: %.1f W on average", j, secs,
			 j / secs);
		page__figure(f, label, value, exact, "#tl-gpum-power");
		shown++;
	}
}

static void gpum_page_free(void *st)
{
	struct gpum_page *g = st;

	if (!g)
		return;
	for (int d = 0; d < GPUM_MAX_DEVICES; d++) {
		time_bins__free(&g->dev[d].sm);
		time_bins__free(&g->dev[d].power);
	}
	free(g);
}

const struct page_family gpum_page = {
	.open = gpum_page_open,
	.record = gpum_page_record,
	.timelines = gpum_page_timelines,
	.figures = gpum_page_figures,
	.free = gpum_page_free,
};
