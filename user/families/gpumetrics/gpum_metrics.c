// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family in `bpfsight monitor`: each device's latest sample as Prometheus
 * gauges under dcgm-exporter's names and units (DCGM_FI_DEV_GPU_UTIL in %, ..._POWER_USAGE in
 * W, ..._FB_USED in MiB, DCGM_FI_PROF_SM_ACTIVE as a ratio; the energy counter in mJ), with
 * its labels gpu, UUID, device, modelName, pci_bus_id, so that a dashboard made for
 * dcgm-exporter reads them; a metric dcgm-exporter has no field for is
 * bpfsight_gpu_KEY (the PCIe and NVLink byte counters: bpfsight_gpu_KEY_bytes_total). A metric
 * the device lacks has no series. Memory: the walk's (a KEY per device).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "gpumetrics.h"
#include "metrics_family.h"

struct gpum_mon {
	struct gpum_walk w;
	__u64 have[GPUM_MAX_DEVICES]; /* the metrics the latest sample had */
	__u64 val[GPUM_MAX_DEVICES][GPUM_NMETRICS];
	__u64 seen; /* devices sampled */
};

static int gpum_mon_open(const struct record_opts *o, void **st)
{
	*st = calloc(1, sizeof(struct gpum_mon));
	return *st ? 0 : -ENOMEM;
}

static void gpum_mon_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	struct gpum_mon *g = st;
	__u64 have, val[GPUM_NMETRICS];
	__u32 dev;

	gpum_walk__observe(&g->w, h);
	if ((h->type != BS_REC_GPUM_KEY && h->type != BS_REC_GPUM_SAMPLE) ||
	    gpum_sample__read(&g->w, h, &dev, &have, val))
		return;
	g->seen |= 1ull << dev;
	/* each metric's latest: NVML's slow ones are not in every sample */
	g->have[dev] |= have;
	for (unsigned k = 0; k < GPUM_NMETRICS; k++)
		if (have & GPUM_BIT(k))
			g->val[dev][k] = val[k];
}

/* A device that stopped answering has no series from then on (dcgm-exporter drops it too). */
static int live(const struct gpum_mon *g, __u32 dev)
{
	return (g->seen & (1ull << dev)) && !(g->w.dev[dev].info.flags & BS_GPUM_DEV_LOST);
}

static void labels(FILE *f, const struct gpum_mon *g, __u32 dev)
{
	const struct gpum_dev_state *d = &g->w.dev[dev];

	fprintf(f, "{gpu=\"%u\",UUID=\"", dev);
	metrics__label(f, d->known ? d->info.uuid : "", GPUM_UUID_LEN);
	fprintf(f, "\",device=\"nvidia%u\",modelName=\"", dev);
	metrics__label(f, d->known ? d->info.name : "", GPUM_NAME_LEN);
	fputs("\",pci_bus_id=\"", f);
	metrics__label(f, d->known ? d->info.bus_id : "", GPUM_BUS_LEN);
	fputs("\"}", f);
}

static void gpum_mon_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	const struct gpum_mon *g = st;
	char name[96];

	for (unsigned k = 0; k < GPUM_NMETRICS; k++) {
		const struct gpum_metric_info *mi = &gpum_metrics[k];
		int counter = mi->kind == GPUM_K_COUNTER, any = 0;

		for (__u32 dev = 0; dev < GPUM_MAX_DEVICES && !any; dev++)
			any = live(g, dev) && (g->have[dev] & GPUM_BIT(k));
		if (!any)
			continue;
		if (mi->dcgm)
			snprintf(name, sizeof(name), "%s", mi->dcgm);
		else
			snprintf(name, sizeof(name), "bpfsight_gpu_%s%s", mi->key,
				 counter ? "_bytes_total" : "");
		metrics__head(f, name, counter ? "counter" : "gauge", mi->desc);
		for (__u32 dev = 0; dev < GPUM_MAX_DEVICES; dev++) {
			double v;

			if (!live(g, dev) || !(g->have[dev] & GPUM_BIT(k)))
				continue;
			v = gpum_value(k, g->val[dev][k]);
			fputs(name, f);
			labels(f, g, dev);
			if (mi->kind == GPUM_K_BITS)
				fprintf(f, " %llu\n", (unsigned long long)g->val[dev][k]);
			else
				fprintf(f, " %.15g\n", v * (mi->dcgm ? mi->dcgm_scale : mi->scale));
		}
	}
}

const struct metrics_family gpum_metrics_family = {
	.open = gpum_mon_open,
	.free = free,
	.record = gpum_mon_record,
	.render = gpum_mon_render,
};
