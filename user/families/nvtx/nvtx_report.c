// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's reports, nsys's:
 *   nvtx_sum           ranges per (text, style): nsys's timing columns over their durations
 *   nvtx_gpu_proj_sum  ranges projected onto the GPU (nvtx_proj.c): per (text, style), the
 *                      span from the first to the last GPU operation launched by calls inside
 *                      each instance on its thread, how many operations, and their GPU time
 * A range's name is its text, "DOMAIN:text" in a domain other than the default one (nsys's
 * convention). Ranges still open when the recording stopped (BS_NVTX_OPEN) are counted in
 * neither: their duration is only a lower bound.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "nvtx.h"
#include "nvtx_decode.h"
#include "nvtx_proj.h"
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
	enum { C_STYLE = TIME_SUM_NCOLS, C_NAME, NCOLS };
	static const struct table_col cols[NCOLS] = {
		TIME_SUM_COLS("Instances"),
		[C_STYLE] = { "style", "Style", TABLE_STR },
		[C_NAME] = { "name", "Range", TABLE_STR },
	};
	struct nvtx_sum *st = vst;
	__u64 grand = tgroups__grand(st->g, 0);
	struct tgroup **rows;
	int err;
	size_t n;

	if (st->err)
		return st->err;
	rows = tgroups__sorted(st->g, 0, &n);
	if (!rows)
		return -ENOMEM;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		struct tstat *s = &rows[i]->st[0];

		table__row(t);
		time_sum__set(t, s->count, s->total, s->min, s->max, &s->samples, grand);
		table__set_str(t, C_STYLE, rows[i]->name2);
		table__set_str(t, C_NAME, rows[i]->name);
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
struct proj_sum {
	struct nvtx_proj *p;
	int err;
};

enum { PJ_PROJ, PJ_RANGE, PJ_OPS, PJ_GPU };

static void *proj_sum__new(void)
{
	struct proj_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->p = nvtx_proj__new();
	if (!st->p) {
		free(st);
		return NULL;
	}
	return st;
}

static void proj_sum__free(void *vst)
{
	struct proj_sum *st = vst;

	if (!st)
		return;
	nvtx_proj__free(st->p);
	free(st);
}

static void proj_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct proj_sum *st = vst;

	if (!st->err)
		st->err = nvtx_proj__add(st->p, rec, m);
}

/* One range's projection: the span from its first operation's start to its last's end. */
static int proj_sum__range(void *arg, const struct nvtx_proj_range *r,
			   const struct nvtx_proj_op *ops, size_t n)
{
	__u64 first = ~0ull, last = 0, gpu = 0;
	struct tgroups *g = arg;
	struct tgroup *t;
	char buf[512];

	for (size_t k = 0; k < n; k++) {
		first = ops[k].ts < first ? ops[k].ts : first;
		last = ops[k].ts + ops[k].dur > last ? ops[k].ts + ops[k].dur : last;
		gpu += ops[k].dur;
	}
	t = tgroups__get(g, range_name(r->domain, r->text, buf, sizeof(buf)), style_name(r->flags),
			 0);
	if (!t || tgroup__add(t, PJ_PROJ, last - first) || tgroup__add(t, PJ_RANGE, r->dur) ||
	    tgroup__add(t, PJ_OPS, n) || tgroup__add(t, PJ_GPU, gpu))
		return -ENOMEM;
	return 0;
}

static int proj_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_NAME,
		C_STYLE,
		C_TOTAL_PROJ,
		C_TOTAL_RANGE,
		C_COUNT,
		C_PROJ_AVG,
		C_PROJ_MED,
		C_PROJ_MIN,
		C_PROJ_MAX,
		C_PROJ_STDDEV,
		C_TOTAL_GPU_OPS,
		C_AVG_GPU_OPS,
		C_GPU_TIME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_NAME] = { "name", "Range", TABLE_STR },
		[C_STYLE] = { "style", "Style", TABLE_STR },
		[C_TOTAL_PROJ] = { "total_proj_ns", "Total Proj Time (ns)", TABLE_U64 },
		[C_TOTAL_RANGE] = { "total_range_ns", "Total Range Time (ns)", TABLE_U64 },
		[C_COUNT] = { "count", "Range Instances", TABLE_U64 },
		[C_PROJ_AVG] = { "proj_avg_ns", "Proj Avg (ns)", TABLE_DOUBLE },
		[C_PROJ_MED] = { "proj_med_ns", "Proj Med (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },
		[C_PROJ_MIN] = { "proj_min_ns", "Proj Min (ns)", TABLE_U64, TABLE_COL_MINOR },
		[C_PROJ_MAX] = { "proj_max_ns", "Proj Max (ns)", TABLE_U64, TABLE_COL_MINOR },
		[C_PROJ_STDDEV] = { "proj_stddev_ns", "Proj StdDev (ns)", TABLE_DOUBLE,
				    TABLE_COL_MINOR },
		[C_TOTAL_GPU_OPS] = { "total_gpu_ops", "Total GPU Ops", TABLE_U64,
				      TABLE_COL_IF_ANY },
		[C_AVG_GPU_OPS] = { "avg_gpu_ops", "Avg GPU Ops", TABLE_DOUBLE,
				    TABLE_COL_MINOR | TABLE_COL_IF_ANY },
		[C_GPU_TIME] = { "gpu_time_ns", "GPU Time (ns)", TABLE_U64, TABLE_COL_IF_ANY },
	};
	struct proj_sum *st = vst;
	struct tgroup **rows = NULL;
	struct tgroups *g;
	size_t n = 0;
	int err;

	if (st->err)
		return st->err;
	g = tgroups__new();
	if (!g)
		return -ENOMEM;
	err = nvtx_proj__join(st->p, proj_sum__range, g);
	if (!err) {
		rows = tgroups__sorted(g, PJ_PROJ, &n);
		err = rows ? 0 : -ENOMEM;
	}
	if (err)
		goto out;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		struct tstat *p = &rows[i]->st[PJ_PROJ];

		table__row(t);
		table__set_str(t, C_NAME, rows[i]->name);
		table__set_str(t, C_STYLE, rows[i]->name2);
		table__set_u64(t, C_TOTAL_PROJ, p->total);
		table__set_u64(t, C_TOTAL_RANGE, rows[i]->st[PJ_RANGE].total);
		table__set_u64(t, C_COUNT, p->count);
		table__set_double(t, C_PROJ_AVG, (double)p->total / p->count);
		table__set_double(t, C_PROJ_MED, samples__median(&p->samples));
		table__set_u64(t, C_PROJ_MIN, p->min);
		table__set_u64(t, C_PROJ_MAX, p->max);
		table__set_double(t, C_PROJ_STDDEV, samples__stddev(&p->samples));
		table__set_u64(t, C_TOTAL_GPU_OPS, rows[i]->st[PJ_OPS].total);
		table__set_double(t, C_AVG_GPU_OPS, (double)rows[i]->st[PJ_OPS].total / p->count);
		table__set_u64(t, C_GPU_TIME, rows[i]->st[PJ_GPU].total);
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
