// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's reports, nsys's:
 *   nvtx_sum           ranges per (text, style): nsys's timing columns over their durations
 *   nvtx_gpu_proj_sum  ranges projected onto the GPU: per (text, style), the span from the
 *                      first to the last GPU operation launched by calls inside each instance
 *                      on its thread, how many operations, and their GPU time
 * A range's name is its text, "DOMAIN:text" in a domain other than the default one (nsys's
 * convention). Ranges still open when the recording stopped (BS_NVTX_OPEN) are counted in
 * neither: their duration is only a lower bound.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_decode.h"
#include "nvtx.h"
#include "nvtx_decode.h"
#include "table.h"
#include "tgroups.h"
#include "time_sum.h"

static const char *style_name(__u16 flags)
{
	return flags & BS_NVTX_PUSHPOP ? "PushPop" : "StartEnd";
}

/* "text" or "DOMAIN:text" into BUF (or the text itself). */
static const char *range_name(const char *domain, const char *text, char *buf, size_t len)
{
	if (!*domain)
		return text;
	snprintf(buf, len, "%s:%s", domain, text);
	return buf;
}

static const struct bs_nvtx_range *as_closed_range(const struct bs_hdr *rec)
{
	const struct bs_nvtx_range *r = (const void *)rec;

	if (rec->type != BS_REC_NVTX_RANGE || r->flags & BS_NVTX_OPEN)
		return NULL;
	return r;
}

/* ---- nvtx_sum ---- */
struct nvtx_sum {
	struct tgroups *g; /* (name, style) -> st[0]: durations */
	int err;
};

static void *nvtx_sum__new(void)
{
	struct nvtx_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->g = tgroups__new();
	if (!st->g) {
		free(st);
		return NULL;
	}
	return st;
}

static void nvtx_sum__free(void *vst)
{
	struct nvtx_sum *st = vst;

	if (!st)
		return;
	tgroups__free(st->g);
	free(st);
}

static void nvtx_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_nvtx_range *r = as_closed_range(rec);
	struct nvtx_sum *st = vst;
	struct tgroup *t;
	char buf[512];

	if (!r)
		return;
	t = tgroups__get(st->g,
			 range_name(nvtx_domain_name(m, r->domain_id), nvtx_message(m, r->name_id),
				    buf, sizeof(buf)),
			 style_name(r->flags), 0);
	if (!t || tgroup__add(t, 0, r->dur))
		st->err = -ENOMEM;
}

static int nvtx_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct nvtx_sum *st = vst;
	__u64 grand = tgroups__grand(st->g, 0);
	struct tgroup **rows;
	int c[TIME_SUM_NCOLS + 2], err;
	size_t n;

	if (st->err)
		return st->err;
	rows = tgroups__sorted(st->g, 0, &n);
	if (!rows)
		return -ENOMEM;
	time_sum__cols_counting(t, c, "Instances");
	c[TIME_SUM_NCOLS] = table__add_col(t, "style", "Style", TABLE_STR);
	c[TIME_SUM_NCOLS + 1] = table__add_col(t, "name", "Range", TABLE_STR);
	for (size_t i = 0; i < n; i++) {
		struct tstat *s = &rows[i]->st[0];

		table__row(t);
		time_sum__set(t, c, s->count, s->total, s->min, s->max, &s->samples, grand);
		table__set_str(t, c[TIME_SUM_NCOLS], rows[i]->name2);
		table__set_str(t, c[TIME_SUM_NCOLS + 1], rows[i]->name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static const struct report nvtx_sum = {
	.name = "nvtx_sum",
	.desc = "NVTX Range Summary",
	.new = nvtx_sum__new,
	.add = nvtx_sum__add,
	.emit = nvtx_sum__emit,
	.free = nvtx_sum__free,
};

/* ---- nvtx_gpu_proj_sum ---- */
struct proj_range {
	__u32 pid, tid;
	__u64 ts, dur;
	const char *domain, *text; /* model strings */
	__u16 flags;
};

struct proj_op {
	__u32 pid, tid;
	__u64 call_ts, ts, dur;
};

struct proj_sum {
	struct proj_range *ranges;
	size_t nranges, cap_ranges;
	struct proj_op *ops;
	size_t nops, cap_ops;
	int err;
};

enum { PJ_PROJ, PJ_RANGE, PJ_OPS, PJ_GPU };

static void *proj_sum__new(void)
{
	return calloc(1, sizeof(struct proj_sum));
}

static void proj_sum__free(void *vst)
{
	struct proj_sum *st = vst;

	if (!st)
		return;
	free(st->ranges);
	free(st->ops);
	free(st);
}

/* Room for one more element of SIZE bytes in *V (count *N, capacity *CAP); 0 or -ENOMEM. */
static int grow(void **v, size_t *n, size_t *cap, size_t size)
{
	void *nv;

	if (*n < *cap)
		return 0;
	nv = realloc(*v, (*cap ? *cap * 2 : 256) * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = *cap ? *cap * 2 : 256;
	return 0;
}

static void proj_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_nvtx_range *r = as_closed_range(rec);
	struct proj_sum *st = vst;
	struct gpu_op op;

	if (r) {
		if (grow((void **)&st->ranges, &st->nranges, &st->cap_ranges,
			 sizeof(*st->ranges))) {
			st->err = -ENOMEM;
			return;
		}
		st->ranges[st->nranges++] = (struct proj_range){
			rec->pid,
			rec->tid,
			rec->ts,
			r->dur,
			nvtx_domain_name(m, r->domain_id),
			nvtx_message(m, r->name_id),
			r->flags,
		};
		return;
	}
	/* Only operations whose launching call is known can be placed inside a range. */
	if (!gpu_op__read(rec, &op) || !op.call_ts ||
	    !(op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API)))
		return;
	if (grow((void **)&st->ops, &st->nops, &st->cap_ops, sizeof(*st->ops))) {
		st->err = -ENOMEM;
		return;
	}
	st->ops[st->nops++] = (struct proj_op){ op.pid, op.tid, op.call_ts, op.ts, op.dur };
}

static int op_cmp(const void *x, const void *y)
{
	const struct proj_op *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return (a->call_ts > b->call_ts) - (a->call_ts < b->call_ts);
}

/* The first op of (PID, TID) launched at or after TS. */
static size_t op_lower_bound(const struct proj_sum *st, __u32 pid, __u32 tid, __u64 ts)
{
	struct proj_op key = { pid, tid, ts, 0, 0 };
	size_t lo = 0, hi = st->nops;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (op_cmp(&st->ops[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Project each range onto the GPU operations its thread launched inside it. */
static int proj_sum__join(struct proj_sum *st, struct tgroups *g)
{
	char buf[512];

	if (st->nops)
		qsort(st->ops, st->nops, sizeof(*st->ops), op_cmp);
	for (size_t i = 0; i < st->nranges; i++) {
		const struct proj_range *r = &st->ranges[i];
		__u64 end = r->ts + r->dur, first = ~0ull, last = 0, gpu = 0, nops = 0;
		struct tgroup *t;

		for (size_t k = op_lower_bound(st, r->pid, r->tid, r->ts);
		     k < st->nops && st->ops[k].pid == r->pid && st->ops[k].tid == r->tid &&
		     st->ops[k].call_ts <= end;
		     k++) {
			const struct proj_op *o = &st->ops[k];

			first = o->ts < first ? o->ts : first;
			last = o->ts + o->dur > last ? o->ts + o->dur : last;
			gpu += o->dur;
			nops++;
		}
		if (!nops)
			continue;
		t = tgroups__get(g, range_name(r->domain, r->text, buf, sizeof(buf)),
				 style_name(r->flags), 0);
		if (!t || tgroup__add(t, PJ_PROJ, last - first) ||
		    tgroup__add(t, PJ_RANGE, r->dur) || tgroup__add(t, PJ_OPS, nops) ||
		    tgroup__add(t, PJ_GPU, gpu))
			return -ENOMEM;
	}
	return 0;
}

static int proj_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct proj_sum *st = vst;
	struct tgroup **rows = NULL;
	struct tgroups *g;
	size_t n = 0;
	int c[13], err;

	if (st->err)
		return st->err;
	g = tgroups__new();
	if (!g)
		return -ENOMEM;
	err = proj_sum__join(st, g);
	if (!err) {
		rows = tgroups__sorted(g, PJ_PROJ, &n);
		err = rows ? 0 : -ENOMEM;
	}
	if (err)
		goto out;
	c[0] = table__add_col(t, "name", "Range", TABLE_STR);
	c[1] = table__add_col(t, "style", "Style", TABLE_STR);
	c[2] = table__add_col(t, "total_proj_ns", "Total Proj Time (ns)", TABLE_U64);
	c[3] = table__add_col(t, "total_range_ns", "Total Range Time (ns)", TABLE_U64);
	c[4] = table__add_col(t, "count", "Range Instances", TABLE_U64);
	c[5] = table__add_col(t, "proj_avg_ns", "Proj Avg (ns)", TABLE_DOUBLE);
	c[6] = table__add_col(t, "proj_med_ns", "Proj Med (ns)", TABLE_DOUBLE);
	c[7] = table__add_col(t, "proj_min_ns", "Proj Min (ns)", TABLE_U64);
	c[8] = table__add_col(t, "proj_max_ns", "Proj Max (ns)", TABLE_U64);
	c[9] = table__add_col(t, "proj_stddev_ns", "Proj StdDev (ns)", TABLE_DOUBLE);
	c[10] = table__add_col(t, "total_gpu_ops", "Total GPU Ops", TABLE_U64);
	c[11] = table__add_col(t, "avg_gpu_ops", "Avg GPU Ops", TABLE_DOUBLE);
	c[12] = table__add_col(t, "gpu_time_ns", "GPU Time (ns)", TABLE_U64);
	for (size_t i = 0; i < n; i++) {
		struct tstat *p = &rows[i]->st[PJ_PROJ];

		table__row(t);
		table__set_str(t, c[0], rows[i]->name);
		table__set_str(t, c[1], rows[i]->name2);
		table__set_u64(t, c[2], p->total);
		table__set_u64(t, c[3], rows[i]->st[PJ_RANGE].total);
		table__set_u64(t, c[4], p->count);
		table__set_double(t, c[5], (double)p->total / p->count);
		table__set_double(t, c[6], samples__median(&p->samples));
		table__set_u64(t, c[7], p->min);
		table__set_u64(t, c[8], p->max);
		table__set_double(t, c[9], samples__stddev(&p->samples));
		table__set_u64(t, c[10], rows[i]->st[PJ_OPS].total);
		table__set_double(t, c[11], (double)rows[i]->st[PJ_OPS].total / p->count);
		table__set_u64(t, c[12], rows[i]->st[PJ_GPU].total);
	}
	err = table__err(t);
out:
	free(rows);
	tgroups__free(g);
	return err;
}

static const struct report nvtx_gpu_proj_sum = {
	.name = "nvtx_gpu_proj_sum",
	.desc = "NVTX Range Projection onto the GPU",
	.new = proj_sum__new,
	.add = proj_sum__add,
	.emit = proj_sum__emit,
	.free = proj_sum__free,
};

const struct report *const nvtx_reports[] = {
	&nvtx_sum,
	&nvtx_gpu_proj_sum,
	NULL,
};
