// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu_idle_sum (ours): where each GPU sat idle. Per (process, device): the span from its first
 * operation's start to its last one's end, the time some kernel, copy or memset was running
 * (the union of their intervals: overlapping streams count once), the idle rest, and the idle
 * gaps between busy stretches (how many, how many of 1 ms or more, the longest and when it
 * began).
 *
 * Per process, because CUDA numbers devices per process (CUDA_VISIBLE_DEVICES): device 0 of two
 * processes may be two GPUs. Memory: 16 bytes per operation until the end (the union needs
 * them sorted, and the shim sends streams' records in no global order).
 */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "gpu.h"
#include "gpu_decode.h"
#include "report.h"
#include "hmap.h"
#include "table.h"

#define IDLE_LONG_GAP_NS 1000000ull

struct idle_iv {
	__u64 start, end;
};

struct idle_dev {
	__u32 pid, device;
	struct idle_iv *iv;
	size_t n, cap;
};

struct idle_sum {
	struct hmap *devs; /* {pid, device} -> idle_dev */
	int err;
};

static void *idle_sum__new(void)
{
	struct idle_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->devs = hmap__new(sizeof(struct idle_dev));
	if (!st->devs) {
		free(st);
		return NULL;
	}
	return st;
}

static void idle_sum__free(void *vst)
{
	struct idle_sum *st = vst;
	struct idle_dev *d;
	size_t it = 0;

	if (!st)
		return;
	while ((d = hmap__next(st->devs, &it, NULL)))
		free(d->iv);
	hmap__free(st->devs);
	free(st);
}

static void idle_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct idle_sum *st = vst;
	struct idle_dev *d;
	struct gpu_op op;

	/* CUPTI's start of 0: an operation it could not time (its buffer went before the end). */
	if (!gpu_op__read(rec, &op) || !op.ts)
		return;
	d = hmap__get(st->devs, (struct hkey){ op.pid, op.device }, 1);
	if (d && !d->n) {
		d->pid = op.pid;
		d->device = op.device;
	}
	if (!d || array__grow((void **)&d->iv, d->n, &d->cap, sizeof(*d->iv))) {
		st->err = -ENOMEM;
		return;
	}
	/* A duration past the clock's end would wrap: it ends at the end of time instead. */
	d->iv[d->n++] = (struct idle_iv){ op.ts, op.dur > ~0ull - op.ts ? ~0ull : op.ts + op.dur };
}

static int iv_cmp(const void *x, const void *y)
{
	const struct idle_iv *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->end > b->end) - (a->end < b->end);
}

static int dev_cmp(const void *x, const void *y)
{
	const struct idle_dev *a = *(struct idle_dev *const *)x, *b = *(struct idle_dev *const *)y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->device > b->device) - (a->device < b->device);
}

struct idle_result {
	__u64 span, busy, gaps, long_gaps, max_gap, max_gap_ts;
	__u64 short_idle; /* idle in the gaps under IDLE_LONG_GAP_NS */
};

/* Sweep D's intervals in start order, merging overlaps: busy stretches and the gaps between. */
static void idle_sweep(struct idle_dev *d, struct idle_result *r)
{
	__u64 cur_start, cur_end, gap;

	*r = (struct idle_result){ 0 };
	if (!d->n)
		return;
	qsort(d->iv, d->n, sizeof(*d->iv), iv_cmp);
	cur_start = d->iv[0].start;
	cur_end = d->iv[0].end;
	for (size_t i = 1; i < d->n; i++) {
		if (d->iv[i].start > cur_end) {
			gap = d->iv[i].start - cur_end;
			r->gaps++;
			r->long_gaps += gap >= IDLE_LONG_GAP_NS;
			if (gap < IDLE_LONG_GAP_NS)
				r->short_idle += gap;
			if (gap > r->max_gap) {
				r->max_gap = gap;
				r->max_gap_ts = cur_end;
			}
			r->busy += cur_end - cur_start;
			cur_start = d->iv[i].start;
			cur_end = d->iv[i].end;
		} else if (d->iv[i].end > cur_end) {
			cur_end = d->iv[i].end;
		}
	}
	r->busy += cur_end - cur_start;
	r->span = cur_end - d->iv[0].start;
}

/* ST's devices by (pid, device) into *DEVS (the caller frees it): their count, -ENOMEM. */
static long sorted_devs(struct idle_sum *st, struct idle_dev ***devs)
{
	struct idle_dev *d;
	size_t it = 0, n = 0;

	*devs = calloc(hmap__count(st->devs) + 1, sizeof(**devs));
	if (!*devs)
		return -ENOMEM;
	while ((d = hmap__next(st->devs, &it, NULL)))
		(*devs)[n++] = d;
	qsort(*devs, n, sizeof(**devs), dev_cmp);
	return (long)n;
}

static int idle_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_DEVICE,
		C_OPS,
		C_SPAN,
		C_BUSY,
		C_IDLE,
		C_IDLE_PCT,
		C_GAPS,
		C_GAPS_1MS,
		C_MAX_GAP,
		C_MAX_GAP_TS,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_DEVICE] = { "device", "Device", TABLE_U64 },
		[C_OPS] = { "ops", "GPU Ops", TABLE_U64 },
		[C_SPAN] = { "span_ns", "Span (ns)", TABLE_U64 },
		[C_BUSY] = { "busy_ns", "Busy (ns)", TABLE_U64 },
		[C_IDLE] = { "idle_ns", "Idle (ns)", TABLE_U64 },
		[C_IDLE_PCT] = { "idle_pct", "Idle (%)", TABLE_DOUBLE },
		[C_GAPS] = { "gaps", "Gaps", TABLE_U64 },
		[C_GAPS_1MS] = { "gaps_1ms", "Gaps >= 1 ms", TABLE_U64 },
		[C_MAX_GAP] = { "max_gap_ns", "Max Gap (ns)", TABLE_U64 },
		[C_MAX_GAP_TS] = { "max_gap_ts", "Max Gap At (ns)", TABLE_U64,
				   TABLE_COL_MINOR | TABLE_COL_TIMESTAMP },
	};
	struct idle_sum *st = vst;
	struct idle_dev **devs;
	struct idle_result r;
	int err;
	long n;

	if (st->err)
		return st->err;
	n = sorted_devs(st, &devs);
	if (n < 0)
		return (int)n;
	table__add_cols(t, cols, NCOLS);
	for (long i = 0; i < n; i++) {
		idle_sweep(devs[i], &r);
		table__row(t);
		table__set_u64(t, C_PID, devs[i]->pid);
		table__set_u64(t, C_DEVICE, devs[i]->device);
		table__set_u64(t, C_OPS, devs[i]->n);
		table__set_u64(t, C_SPAN, r.span);
		table__set_u64(t, C_BUSY, r.busy);
		table__set_u64(t, C_IDLE, r.span - r.busy);
		table__set_double(t, C_IDLE_PCT,
				  r.span ? (double)(r.span - r.busy) * 100.0 / r.span : 0);
		table__set_u64(t, C_GAPS, r.gaps);
		table__set_u64(t, C_GAPS_1MS, r.long_gaps);
		table__set_u64(t, C_MAX_GAP, r.max_gap);
		if (r.gaps)
			table__set_u64(t, C_MAX_GAP_TS, r.max_gap_ts);
	}
	err = table__err(t);
	free(devs);
	return err;
}

int gpu_idle__each(void *vst, void (*cb)(const struct gpu_idle_dev *d, void *arg), void *arg)
{
	struct idle_sum *st = vst;
	struct idle_dev **devs;
	struct idle_result r;
	long n;

	if (!st || st->err)
		return st ? st->err : -EINVAL;
	n = sorted_devs(st, &devs);
	if (n < 0)
		return (int)n;
	for (long i = 0; i < n; i++) {
		idle_sweep(devs[i], &r);
		cb(&(struct gpu_idle_dev){ .pid = devs[i]->pid,
					   .device = devs[i]->device,
					   .ops = devs[i]->n,
					   .span = r.span,
					   .busy = r.busy,
					   .gaps = r.gaps,
					   .long_gaps = r.long_gaps,
					   .short_idle = r.short_idle,
					   .max_gap = r.max_gap },
		   arg);
	}
	free(devs);
	return 0;
}

const struct report gpu_idle_sum = {
	.name = "gpu_idle_sum",
	.desc = "GPU Idle Time per Device",
	.new = idle_sum__new,
	.add = idle_sum__add,
	.emit = idle_sum__emit,
	.free = idle_sum__free,
};
