// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family in the exports (export_model.h; docs/EXPORT.md, "GPU metrics").
 *
 * Each GPU of the machine is a track of its own (EX_DEVICE: bpfsight's own view a root track
 * "GPU N metrics (MODEL)" beside the GPU work's, the profiler's the process Kineto gives a GPU's
 * kernels, "GPU N") with a counter per metric it has ("SM Active (%)", "Power (W)"...), in the
 * unit people read: a running total (energy, PCIe and NVLink bytes) as its rate between samples
 * ("Energy (W)", "PCIe TX (B/s)"), the throttle reasons as their bits. A value is written where
 * it changes; a metric the device lacks has no counter. The device's own events (found, lost)
 * are instants there. A process's use of a GPU (NVML's accounting) is counters of the process,
 * "GPU N SM (%)" and "GPU N memory": every sample in the profiler's view, where they change in
 * bpfsight's own.
 *
 * Tables, nsys's where nsys has them:
 *   GPU_METRICS              nsys's table and columns: a row per metric per sample,
 *                            timestamp (ns), typeId (the GPU: nsys's typeId & 0xff), metricId,
 *                            value, the value as recorded (exact: an integer, or GPM's double)
 *   TARGET_INFO_GPU_METRICS  nsys's: per GPU and metric, typeId, sourceId (the GPU), typeName
 *                            (its model), metricId, metricName ("SM Active [%]", "Power
 *                            [mW]": the unit of value)
 *   BPFSIGHT_GPU_DEVICES     each device: its identity, what it lacks and why, whether lost
 *   BPFSIGHT_GPU_PROCESSES   a process's use of a GPU, as NVML accounts it
 * A metric a device lacks has no row (not 0). Memory: a few words per device and metric, per
 * process and device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_model.h"
#include "gpumetrics.h"
#include "hmap.h"

static const struct ex_column metrics_cols[] = {
	EXC_INT_NN("timestamp"),
	EXC_INT_NN("typeId"),
	EXC_INT_NN("metricId"),
	EXC_INT_NN("value"),
	{ 0 },
};
static const struct ex_index metrics_idx[] = {
	{ "ts", "timestamp" },
	{ "metric", "typeId, metricId" },
	{ 0 },
};
static const struct ex_table gpum_rows = { "GPU_METRICS", metrics_cols, .indexes = metrics_idx };

static const struct ex_column info_cols[] = {
	EXC_INT_NN("typeId"),	EXC_INT_NN("sourceId"),	   EXC_TEXT_NN("typeName"),
	EXC_INT_NN("metricId"), EXC_TEXT_NN("metricName"), { 0 },
};
static const struct ex_table gpum_info = { "TARGET_INFO_GPU_METRICS", info_cols };

static const struct ex_column devices_cols[] = {
	EXC_INT_NN("timestamp"), EXC_INT_NN("deviceId"), EXC_TEXT_NN("name"),
	EXC_TEXT_NN("uuid"),	 EXC_TEXT_NN("busId"),	 EXC_INT("totalMemory"),
	EXC_INT("powerLimitMw"), EXC_INT_NN("gpm"),	 EXC_INT_NN("lost"),
	EXC_TEXT("unsupported"), EXC_TEXT("denied"),	 { 0 },
};
static const struct ex_table gpum_devices = { "BPFSIGHT_GPU_DEVICES", devices_cols };

static const struct ex_column procs_cols[] = {
	EXC_INT_NN("timestamp"), EXC_INT_NN("globalPid"), EXC_INT_NN("deviceId"),
	EXC_INT("smUtil"),	 EXC_INT("memUtil"),	  EXC_INT("encUtil"),
	EXC_INT("decUtil"),	 EXC_INT("usedMemory"),	  { 0 },
};
static const struct ex_table gpum_procs = { "BPFSIGHT_GPU_PROCESSES", procs_cols };

static const struct ex_table *const gpum_tables[] = {
	&gpum_rows, &gpum_info, &gpum_devices, &gpum_procs, NULL,
};

struct gpum_metric_state {
	double last; /* the value written last (has) */
	double prev; /* a running total: its previous sample (has_prev) */
	__u64 prev_ts;
};

struct gpum_dev_export {
	__u64 has, has_prev, described; /* bits per metric: last, prev, its TARGET_INFO row */
	struct gpum_metric_state m[GPUM_NMETRICS];
};

struct gpum_export {
	struct gpum_dev_export dev[GPUM_MAX_DEVICES];
	struct hmap *procs; /* bpfsight's own view: {pid, device << 8 | what} -> double + 1 */
};

static int gpum_open(struct ex_sink *s, void **st)
{
	struct gpum_export *g = calloc(1, sizeof(*g));

	*st = g;
	if (!g || (ex_wants(s, EX_OWN) && !(g->procs = hmap__new(sizeof(double) * 2))))
		return -ENOMEM;
	return 0;
}

static void gpum_free(void *st)
{
	struct gpum_export *g = st;

	if (g)
		hmap__free(g->procs);
	free(g);
}

/* Device DEV's track: "GPU N metrics (MODEL)" in bpfsight's view. NAME: its buffer. */
static struct ex_track device_track(const struct trace_model *m, __u32 dev, char *name, size_t len)
{
	const struct gpum_walk *w = gpum_walk__of(m);

	snprintf(name, len, "GPU %u metrics", dev);
	if (w && w->dev[dev].known && w->dev[dev].info.name[0])
		snprintf(name + strlen(name), len - strlen(name), " (%.*s)", GPUM_NAME_LEN,
			 w->dev[dev].info.name);
	return (struct ex_track){
		.kind = EX_DEVICE,
		.device = dev,
		.name = name,
		.desc = "NVML's and GPM's metrics of this GPU, sampled by the gpumetrics family "
			"(docs/GPU-METRICS.md)",
	};
}

/* Metric K of a sample at TS: its value, or a running total's rate, where it changes. */
static int metric(struct ex_sink *s, struct gpum_dev_export *d, const struct ex_track *on,
		  unsigned k, __u64 ts, __u64 raw)
{
	const struct gpum_metric_info *mi = &gpum_metrics[k];
	struct gpum_metric_state *c = &d->m[k];
	double v = gpum_value(k, raw);
	int counter = mi->kind == GPUM_K_COUNTER;
	char name[64];

	if (counter) {
		int ok = (d->has_prev & GPUM_BIT(k)) && ts > c->prev_ts && v >= c->prev;
		double rate = ok ? (v - c->prev) * mi->scale * 1e9 / (double)(ts - c->prev_ts) : 0;

		c->prev = v;
		c->prev_ts = ts;
		d->has_prev |= GPUM_BIT(k);
		if (!ok)
			return 0;
		v = rate;
	} else if (mi->kind != GPUM_K_BITS) {
		v *= mi->scale;
	}
	if ((d->has & GPUM_BIT(k)) && c->last == v)
		return 0;
	d->has |= GPUM_BIT(k);
	c->last = v;
	snprintf(name, sizeof(name), "%s (%s)", mi->title,
		 counter		   ? (!strcmp(mi->unit, "J") ? "W" : "B/s")
		 : mi->kind == GPUM_K_BITS ? "bits"
					   : mi->unit);
	return ex_count1(s,
			 &(struct ex_counter){
				 .on = *on,
				 .name = name,
				 .cat = "gpu_metrics",
				 .desc = mi->desc,
				 .unit = !counter && !strcmp(mi->unit, "B") ? EX_UNIT_BYTES : 0 },
			 ts, "value", EX_V_REAL(v));
}

/* nsys's name of metric K on DEV, its TARGET_INFO_GPU_METRICS row the first time. */
static int describe(struct ex_sink *s, struct gpum_dev_export *d, __u32 dev, unsigned k)
{
	const struct gpum_walk *w = gpum_walk__of(s->model);
	char name[96];

	d->described |= GPUM_BIT(k);
	snprintf(name, sizeof(name), "%s [%s]", gpum_metrics[k].title, gpum_metrics[k].raw);
	return ex_row(
		s, &gpum_info, EX_ROW_ADD,
		(struct ex_value[]){ EX_V_INT(dev), EX_V_INT(dev),
				     EX_V_TEXT(w && w->dev[dev].known ? w->dev[dev].info.name : ""),
				     EX_V_INT(k), EX_V_TEXT(name) },
		NULL);
}

/* A sample: a row per metric it has, and each one's counter on its device's track. */
static int sample(struct ex_sink *s, struct gpum_export *g, const struct bs_hdr *rec)
{
	__u64 have, val[GPUM_NMETRICS];
	struct ex_track on;
	char name[GPUM_NAME_LEN + 32];
	__u32 dev;
	int err;

	if (gpum_sample__read(gpum_walk__of(s->model), rec, &dev, &have, val))
		return 0;
	on = device_track(s->model, dev, name, sizeof(name));
	err = ex_track(s, &on, rec->ts);
	for (unsigned k = 0; k < GPUM_NMETRICS && !err; k++) {
		if (!(have & GPUM_BIT(k)))
			continue;
		if (ex_wants(s, EX_TABLES) && !(g->dev[dev].described & GPUM_BIT(k)))
			err = describe(s, &g->dev[dev], dev, k);
		if (!err)
			err = ex_row(s, &gpum_rows, EX_ROW_ADD,
				     (struct ex_value[]){ EX_V_UINT(rec->ts), EX_V_INT(dev),
							  EX_V_INT(k),
							  GPUM_DOUBLES & GPUM_BIT(k)
								  ? EX_V_REAL(gpum_value(k, val[k]))
								  : EX_V_UINT(val[k]) },
				     NULL);
		if (!err && ex_wants(s, EX_TIMELINE))
			err = metric(s, &g->dev[dev], &on, k, rec->ts, val[k]);
	}
	return err;
}

/* A process's use of a GPU: WHAT 0 its SM share, 1 its memory, V. */
static int proc_counter(struct ex_sink *s, struct gpum_export *g, const struct bs_gpum_proc *p,
			int what, double v)
{
	struct ex_track process = { .kind = EX_PROCESS, .pid = p->h.pid };
	struct hkey key = { p->h.pid, (__u64)p->device << 8 | (__u64)what };
	struct ex_counter c = { .on = process, .cat = "gpu_metrics", .views = EX_PROFILER };
	double *last;
	char name[48];
	int err;

	snprintf(name, sizeof(name), what ? "GPU %u memory" : "GPU %u SM (%%)", p->device);
	c.name = name;
	err = ex_count1(s, &c, p->h.ts, what ? "bytes" : "value", EX_V_REAL(v));
	/* bpfsight's own view: the process's track first (described anew when renamed), the
	 * counter where its value changes; a process 0 is no process. */
	if (err || !g->procs || !p->h.pid)
		return err;
	err = ex_track(s, &process, p->h.ts);
	last = hmap__get(g->procs, key, 1);
	if (err || !last)
		return err ? err : -ENOMEM;
	if (last[0] && last[1] == v)
		return 0;
	last[0] = 1;
	last[1] = v;
	c.views = EX_OWN;
	c.desc = what ? "Device memory this process holds on the GPU (NVML)"
		      : "Share of the GPU's SM time this process used (NVML's accounting)";
	c.unit = what ? EX_UNIT_BYTES : 0;
	c.key = key.b;
	return ex_count1(s, &c, p->h.ts, "value", EX_V_REAL(v));
}

static int proc_use(struct ex_sink *s, struct gpum_export *g, const struct bs_hdr *rec)
{
	const struct bs_gpum_proc *p = (const void *)rec;
	int err = 0;

	if (rec->size < sizeof(*p))
		return 0;
	err = ex_row(s, &gpum_procs, EX_ROW_ADD,
		     (struct ex_value[]){ EX_V_UINT(rec->ts), EX_V_INT(ex_gtid(rec->pid, 0)),
					  EX_V_INT(p->device),
					  EX_V_INT_IF(p->have & BS_GPUM_PROC_SM, p->sm_util),
					  EX_V_INT_IF(p->have & BS_GPUM_PROC_MEM, p->mem_util),
					  EX_V_INT_IF(p->have & BS_GPUM_PROC_ENC, p->enc_util),
					  EX_V_INT_IF(p->have & BS_GPUM_PROC_DEC, p->dec_util),
					  EX_V_INT_IF(p->have & BS_GPUM_PROC_USED, p->used_mem) },
		     NULL);
	if (!err && p->have & BS_GPUM_PROC_SM)
		err = proc_counter(s, g, p, 0, p->sm_util);
	if (!err && p->have & BS_GPUM_PROC_USED)
		err = proc_counter(s, g, p, 1, (double)p->used_mem);
	return err;
}

/* A device found or lost: its row, an instant on its track. */
static int device(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_gpum_device *d = (const void *)rec;
	struct ex_profiler prof = {
		.name = d->flags & BS_GPUM_DEV_LOST ? "GPU lost" : ev->kind,
		.cat = "gpu_metrics",
		.args = ev,
	};
	char name[GPUM_NAME_LEN + 32];
	int err;

	err = ex_row(s, &gpum_devices, EX_ROW_ADD,
		     (struct ex_value[]){ EX_V_UINT(rec->ts), EX_V_INT(d->device),
					  ex_v_arg(ev, "model"), ex_v_arg(ev, "uuid"),
					  ex_v_arg(ev, "bus_id"),
					  EX_V_INT_IF(d->mem_total, d->mem_total),
					  EX_V_INT_IF(d->power_limit, d->power_limit),
					  EX_V_INT(!!(d->flags & BS_GPUM_DEV_GPM)),
					  EX_V_INT(!!(d->flags & BS_GPUM_DEV_LOST)),
					  ex_v_arg(ev, "unsupported"), ex_v_arg(ev, "denied") },
		     NULL);
	if (err || d->device >= GPUM_MAX_DEVICES)
		return err; /* by its style */
	err = ex_event(s, &(struct ex_event){
				  .rec = rec,
				  .ev = ev,
				  .on = device_track(s->model, d->device, name, sizeof(name)),
				  .shape = EX_INSTANT,
				  .prof = &prof,
			  });
	return err ? err : 1;
}

static int gpum_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	int err;

	switch (rec->type) {
	case BS_REC_GPUM_KEY:
	case BS_REC_GPUM_SAMPLE:
		err = sample(s, st, rec);
		break;
	case BS_REC_GPUM_PROC:
		err = proc_use(s, st, rec);
		break;
	case BS_REC_GPUM_DEVICE:
		return ev ? device(s, rec, ev) : 0;
	default:
		return 0;
	}
	return err ? err : 1; /* counters, no event */
}

const struct family_export gpum_export = {
	.tables = gpum_tables,
	.open = gpum_open,
	.free = gpum_free,
	.record = gpum_record,
};
