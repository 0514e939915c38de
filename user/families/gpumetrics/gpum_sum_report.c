// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats -r gpu_metrics_sum: per device, each metric it has over the recording: its samples,
 * mean, median, 99th percentile, least and most, in the unit people read (W, %, MHz, B); a
 * running total (energy, PCIe and NVLink bytes) as its rate between samples (W, B/s) and its
 * increase (J, B); and the time the clocks were held down, by reason. A metric a device
 * lacks has no row: not 0. Mean, least and most are exact; the percentiles are of the values
 * kept to 5 significant digits (equal values counted once each: memory follows the distinct
 * values, not the samples).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpum_report.h"
#include "hmap.h"
#include "report.h"
#include "stats_math.h"
#include "table.h"

/* The low mantissa bits dropped from a value for the percentiles' counts: 16 kept. */
#define QUANT_MASK (~((1ull << 36) - 1))

static int acc_add(struct gpum_acc *a, double v)
{
	__u64 bits, *count;

	if (!a->n || v < a->min)
		a->min = v;
	if (!a->n || v > a->max)
		a->max = v;
	a->n++;
	a->sum += v;
	if (!a->dist && !(a->dist = hmap__new(sizeof(__u64))))
		return -ENOMEM;
	memcpy(&bits, &v, sizeof(bits));
	count = hmap__get(a->dist, (struct hkey){ bits & QUANT_MASK, 0 }, 1);
	if (!count)
		return -ENOMEM;
	(*count)++;
	return 0;
}

/* The median and 99th percentile of A's kept values. */
static int acc_percentiles(const struct gpum_acc *a, double *p50, double *p99)
{
	struct samples s = { 0 };
	struct hkey k;
	__u64 *count;
	size_t it = 0;
	double v;

	while (a->dist && (count = hmap__next(a->dist, &it, &k))) {
		memcpy(&v, &k.a, sizeof(v));
		if (samples__add(&s, v, *count)) {
			samples__free(&s);
			return -ENOMEM;
		}
	}
	*p50 = samples__median(&s);
	*p99 = samples__percentile(&s, 99);
	samples__free(&s);
	return 0;
}

static void acc_free(struct gpum_acc *a)
{
	hmap__free(a->dist);
	a->dist = NULL;
}

static void *sum_new(void)
{
	return calloc(1, sizeof(struct gpum_sum));
}

static void sum_free(void *st)
{
	struct gpum_sum *s = st;

	if (!s)
		return;
	for (int d = 0; d < GPUM_MAX_DEVICES; d++)
		for (int m = 0; m < GPUM_NMETRICS; m++)
			acc_free(&s->dev[d].acc[m]);
	free(s);
}

/* The reasons held by the previous sample, over the time up to this one. */
static void throttle_add(struct gpum_sum_dev *d, __u64 ts, int has, __u64 bits)
{
	if (d->thr_has && ts > d->thr_ts && ts - d->thr_ts <= GPUM_SUM_GAP_NS) {
		__u64 dt = ts - d->thr_ts;

		d->thr_covered += dt;
		for (unsigned b = 0; b < GPUM_THROTTLE_BITS; b++)
			if (d->thr_bits & (1ull << b))
				d->thr_ns[b] += dt;
		if (d->thr_bits & GPUM_THROTTLE_SLOWING)
			d->thr_any_ns += dt;
	}
	d->thr_has = has;
	d->thr_ts = ts;
	d->thr_bits = bits;
	d->thr_seen |= has ? bits : 0;
}

static void sum_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct gpum_sum *s = st;
	__u64 have, val[GPUM_NMETRICS];
	struct gpum_sum_dev *d;
	__u32 dev;

	if ((rec->type != BS_REC_GPUM_KEY && rec->type != BS_REC_GPUM_SAMPLE) ||
	    gpum_sample__read(gpum_walk__of(m), rec, &dev, &have, val) || s->err)
		return;
	d = &s->dev[dev];
	if (!d->samples++)
		d->first_ts = rec->ts;
	d->last_ts = rec->ts;
	s->ndev += d->samples == 1;
	for (unsigned k = 0; k < GPUM_NMETRICS && !s->err; k++) {
		const struct gpum_metric_info *mi = &gpum_metrics[k];
		struct gpum_acc *a = &d->acc[k];
		double v;

		if (!(have & GPUM_BIT(k)) || mi->kind == GPUM_K_BITS)
			continue;
		v = gpum_value(k, val[k]);
		if (mi->kind == GPUM_K_COUNTER) {
			/* its rate since its previous sample; a counter that went back restarted */
			if (a->has_prev && rec->ts > a->prev_ts && v >= a->prev &&
			    rec->ts - a->prev_ts <= GPUM_SUM_GAP_NS) {
				s->err = acc_add(a, (v - a->prev) * 1e9 /
							    (double)(rec->ts - a->prev_ts));
				a->total += v - a->prev;
			}
			a->prev = v;
			a->prev_ts = rec->ts;
			a->has_prev = 1;
			continue;
		}
		s->err = acc_add(a, v);
	}
	if (have & GPUM_BIT(GPUM_THROTTLE)) /* read at NVML's slower pace: its own samples */
		throttle_add(d, rec->ts, 1, val[GPUM_THROTTLE]);
}

enum {
	C_DEVICE,
	C_GPU,
	C_METRIC,
	C_UNIT,
	C_SAMPLES,
	C_MEAN,
	C_MED,
	C_P99,
	C_MIN,
	C_MAX,
	C_TOTAL,
	C_TOTAL_UNIT,
	NCOLS
};

static const struct table_col cols[NCOLS] = {
	[C_DEVICE] = { "device", "GPU", TABLE_U64 },
	[C_GPU] = { "gpu", "Model", TABLE_STR, TABLE_COL_MINOR },
	[C_METRIC] = { "metric", "Metric", TABLE_STR },
	[C_UNIT] = { "unit", "Unit", TABLE_STR },
	[C_SAMPLES] = { "samples", "Samples", TABLE_U64, TABLE_COL_MINOR },
	[C_MEAN] = { "mean", "Mean", TABLE_DOUBLE, 0, 2 },
	[C_MED] = { "med", "Med", TABLE_DOUBLE, 0, 2 },
	[C_P99] = { "p99", "P99", TABLE_DOUBLE, 0, 2 },
	[C_MIN] = { "min", "Min", TABLE_DOUBLE, TABLE_COL_MINOR, 2 },
	[C_MAX] = { "max", "Max", TABLE_DOUBLE, TABLE_COL_MINOR, 2 },
	[C_TOTAL] = { "total", "Total", TABLE_DOUBLE, TABLE_COL_IF_ANY, 3 },
	[C_TOTAL_UNIT] = { "total_unit", "Total Unit", TABLE_STR, TABLE_COL_IF_ANY },
};

/* The rate unit of a running total: J a second is W. */
static const char *rate_unit(unsigned k)
{
	return !strcmp(gpum_metrics[k].unit, "J") ? "W" : "B/s";
}

static int metric_rows(struct table *t, const struct gpum_sum_dev *d, __u32 dev, const char *gpu)
{
	for (unsigned k = 0; k < GPUM_NMETRICS; k++) {
		const struct gpum_metric_info *mi = &gpum_metrics[k];
		const struct gpum_acc *a = &d->acc[k];
		double p50, p99, sc = mi->scale;
		int counter = mi->kind == GPUM_K_COUNTER;

		if (!a->n || mi->kind == GPUM_K_BITS)
			continue;
		if (acc_percentiles(a, &p50, &p99))
			return -ENOMEM;
		table__row(t);
		table__set_u64(t, C_DEVICE, dev);
		table__set_str(t, C_GPU, gpu);
		table__set_str(t, C_METRIC, mi->key);
		table__set_str(t, C_UNIT, counter ? rate_unit(k) : mi->unit);
		table__set_u64(t, C_SAMPLES, a->n);
		table__set_double(t, C_MEAN, a->sum / (double)a->n * sc);
		table__set_double(t, C_MED, p50 * sc);
		table__set_double(t, C_P99, p99 * sc);
		table__set_double(t, C_MIN, a->min * sc);
		table__set_double(t, C_MAX, a->max * sc);
		if (counter) {
			table__set_double(t, C_TOTAL, a->total * sc);
			table__set_str(t, C_TOTAL_UNIT, mi->unit);
		}
	}
	return 0;
}

/* A row of time with throttle reasons: its share of the time covered, and the seconds. */
static void throttle_row(struct table *t, const struct gpum_sum_dev *d, __u32 dev, const char *gpu,
			 const char *reason, __u64 ns)
{
	char name[64];

	snprintf(name, sizeof(name), "throttle:%s", reason);
	table__row(t);
	table__set_u64(t, C_DEVICE, dev);
	table__set_str(t, C_GPU, gpu);
	table__set_str(t, C_METRIC, name);
	table__set_str(t, C_UNIT, "%");
	table__set_double(t, C_MEAN, 100.0 * (double)ns / (double)d->thr_covered);
	table__set_double(t, C_TOTAL, (double)ns / 1e9);
	table__set_str(t, C_TOTAL_UNIT, "s");
}

static int sum_emit(void *st, const struct trace_model *m, struct table *t)
{
	struct gpum_sum *s = st;
	const struct gpum_walk *w = gpum_walk__of(m);
	char gpu[GPUM_NAME_LEN + 1];
	int err;

	if (s->err)
		return s->err;
	table__add_cols(t, cols, NCOLS);
	for (__u32 dev = 0; dev < GPUM_MAX_DEVICES; dev++) {
		const struct gpum_sum_dev *d = &s->dev[dev];

		if (!d->samples)
			continue;
		snprintf(gpu, sizeof(gpu), "%s",
			 w && w->dev[dev].known ? w->dev[dev].info.name : "");
		if ((err = metric_rows(t, d, dev, gpu)))
			return err;
		if (!d->thr_covered)
			continue;
		throttle_row(t, d, dev, gpu, "any", d->thr_any_ns);
		for (unsigned b = 0; b < GPUM_THROTTLE_BITS; b++)
			if ((d->thr_seen & (1ull << b)) && gpum_throttle_name(b))
				throttle_row(t, d, dev, gpu, gpum_throttle_name(b), d->thr_ns[b]);
	}
	if (!table__nrows(t) && w && w->has_status && w->status.state != BS_GPUM_RUNNING)
		table__add_note(t, "no GPU metrics: %.*s", GPUM_STATUS_TEXT, w->status.text);
	return table__err(t);
}

const struct report gpum_sum_report = {
	.name = "gpu_metrics_sum",
	.desc = "GPU metrics per device: mean, median, p99 of each NVML and GPM metric, energy, "
		"time throttled and why",
	.new = sum_new,
	.add = sum_add,
	.emit = sum_emit,
	.free = sum_free,
};
