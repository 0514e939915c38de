// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's reports, nsys's where nsys has one:
 *   cuda_gpu_kern_sum      kernels per name: nsys's timing columns over their GPU time
 *   cuda_gpu_mem_time_sum  copies and memsets per operation ("[CUDA memcpy Host-to-Device]")
 *   cuda_gpu_mem_size_sum  the same operations by bytes
 * and, in their own files, cuda_kern_exec_sum (gpu_exec_report.c: launch, queue and kernel
 * time per launching call), gpu_idle_sum (gpu_idle_report.c) and shim_sum (shim_report.c).
 */
#include <errno.h>
#include <stdlib.h>
#include "gpu.h"
#include "gpu_decode.h"
#include "table.h"
#include "tgroups.h"
#include "time_sum.h"

enum gpu_sum_kind { SUM_KERNELS, SUM_MEM_TIME, SUM_MEM_SIZE };

struct gpu_sum {
	enum gpu_sum_kind kind;
	struct tgroups *g; /* name -> st[0]: durations (or bytes for SUM_MEM_SIZE) */
	int err;
};

static void *gpu_sum__new(enum gpu_sum_kind kind)
{
	struct gpu_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->kind = kind;
	st->g = tgroups__new();
	if (!st->g) {
		free(st);
		return NULL;
	}
	return st;
}

static void *kern_sum__new(void)
{
	return gpu_sum__new(SUM_KERNELS);
}

static void *mem_time_sum__new(void)
{
	return gpu_sum__new(SUM_MEM_TIME);
}

static void *mem_size_sum__new(void)
{
	return gpu_sum__new(SUM_MEM_SIZE);
}

static void gpu_sum__free(void *vst)
{
	struct gpu_sum *st = vst;

	if (!st)
		return;
	tgroups__free(st->g);
	free(st);
}

static void gpu_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct gpu_sum *st = vst;
	struct tgroup *t;
	struct gpu_op op;

	if (!gpu_op__read(rec, &op) || (op.type == BS_REC_GPU_KERNEL) != (st->kind == SUM_KERNELS))
		return;
	t = tgroups__get(st->g, gpu_op__name(&op, m), NULL, 0);
	if (!t || tgroup__add(t, 0, st->kind == SUM_MEM_SIZE ? op.bytes : op.dur))
		st->err = -ENOMEM;
}

/* nsys's timing columns, then the name. */
static int gpu_sum__emit_time(void *vst, const struct trace_model *m, struct table *t)
{
	struct gpu_sum *st = vst;
	enum { C_NAME = TIME_SUM_NCOLS, NCOLS };
	const struct table_col cols[NCOLS] = {
		TIME_SUM_COLS(st->kind == SUM_KERNELS ? "Instances" : "Count"),
		[C_NAME] = { "name", st->kind == SUM_KERNELS ? "Name" : "Operation", TABLE_STR },
	};
	__u64 grand = tgroups__grand(st->g, 0);
	struct tgroup **rows;
	size_t n;
	int err;

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
		table__set_str(t, C_NAME, rows[i]->name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

/* nsys's cuda_gpu_mem_size_sum, in bytes where nsys shows MB. */
static int gpu_sum__emit_size(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_TOTAL_BYTES,
		C_COUNT,
		C_AVG_BYTES,
		C_MED_BYTES,
		C_MIN_BYTES,
		C_MAX_BYTES,
		C_STDDEV_BYTES,
		C_NAME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_TOTAL_BYTES] = { "total_bytes", "Total (B)", TABLE_U64 },
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_AVG_BYTES] = { "avg_bytes", "Avg (B)", TABLE_DOUBLE },
		[C_MED_BYTES] = { "med_bytes", "Med (B)", TABLE_DOUBLE },
		[C_MIN_BYTES] = { "min_bytes", "Min (B)", TABLE_U64 },
		[C_MAX_BYTES] = { "max_bytes", "Max (B)", TABLE_U64 },
		[C_STDDEV_BYTES] = { "stddev_bytes", "StdDev (B)", TABLE_DOUBLE },
		[C_NAME] = { "name", "Operation", TABLE_STR },
	};
	struct gpu_sum *st = vst;
	struct tgroup **rows;
	size_t n;
	int err;

	if (st->err)
		return st->err;
	rows = tgroups__sorted(st->g, 0, &n);
	if (!rows)
		return -ENOMEM;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		struct tstat *s = &rows[i]->st[0];

		table__row(t);
		table__set_u64(t, C_TOTAL_BYTES, s->total);
		table__set_u64(t, C_COUNT, s->count);
		table__set_double(t, C_AVG_BYTES, (double)s->total / s->count);
		table__set_double(t, C_MED_BYTES, samples__median(&s->samples));
		table__set_u64(t, C_MIN_BYTES, s->min);
		table__set_u64(t, C_MAX_BYTES, s->max);
		table__set_double(t, C_STDDEV_BYTES, samples__stddev(&s->samples));
		table__set_str(t, C_NAME, rows[i]->name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static const struct report cuda_gpu_kern_sum = {
	.name = "cuda_gpu_kern_sum",
	.desc = "CUDA GPU Kernel Summary",
	.new = kern_sum__new,
	.add = gpu_sum__add,
	.emit = gpu_sum__emit_time,
	.free = gpu_sum__free,
};

static const struct report cuda_gpu_mem_time_sum = {
	.name = "cuda_gpu_mem_time_sum",
	.desc = "CUDA GPU MemOps Summary (by Time)",
	.new = mem_time_sum__new,
	.add = gpu_sum__add,
	.emit = gpu_sum__emit_time,
	.free = gpu_sum__free,
};

static const struct report cuda_gpu_mem_size_sum = {
	.name = "cuda_gpu_mem_size_sum",
	.desc = "CUDA GPU MemOps Summary (by Size)",
	.new = mem_size_sum__new,
	.add = gpu_sum__add,
	.emit = gpu_sum__emit_size,
	.free = gpu_sum__free,
};

const struct report *const gpu_reports[] = {
	&cuda_gpu_kern_sum,
	&cuda_gpu_mem_time_sum,
	&cuda_gpu_mem_size_sum,
	&cuda_kern_exec_sum,
	&gpu_idle_sum,
	&shim_sum,
	NULL,
};
