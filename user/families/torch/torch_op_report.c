// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family's op reports (ours, torch.profiler's view):
 *   torch_op_sum      per op name, as key_averages(): calls, CPU total and self time, the GPU
 *                     time of the work it launched (self: launched while it was the innermost
 *                     op; total: by it or the ops inside it), the GPU operations it launched;
 *                     with mem's records, the memory allocated less freed in its time (self:
 *                     less its children's) on the CPU and CUDA devices (torch_op_mem.h), and
 *                     torch.profiler's "[memory]" row: what no op's time holds
 *   torch_op_kernels  op -> GPU work: per (op, kernel or copy), how many and their GPU time
 * The join of ops and GPU work is torch_ops.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "table.h"
#include "tgroups.h"
#include "time_sum.h"
#include "torch.h"
#include "torch_op_groups.h"
#include "torch_op_mem.h"
#include "torch_ops.h"
#include "msg.h"

struct op_report {
	struct torch_ops *t;
	int err;
};

static void *op_report__new_mem(int with_mem)
{
	struct op_report *st = calloc(1, sizeof(*st));

	if (st && !(st->t = torch_ops__new(with_mem))) {
		free(st);
		return NULL;
	}
	return st;
}

static void *op_report__new(void)
{
	return op_report__new_mem(0);
}

static void *op_sum__new(void)
{
	return op_report__new_mem(1);
}

static void op_report__free(void *vst)
{
	struct op_report *st = vst;

	if (!st)
		return;
	torch_ops__free(st->t);
	free(st);
}

static void op_report__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct op_report *st = vst;

	if (!st->err)
		st->err = torch_ops__add(st->t, rec, m);
}

/* ---- torch_op_sum ---- */

#define MEMORY_ROW "[memory]" /* torch.profiler's name for memory in no op's time */

enum {
	C_SELF_PCT,
	C_SELF,
	C_TOTAL,
	C_COUNT,
	C_AVG,
	C_MAX,
	C_GPU_SELF,
	C_GPU_TOTAL,
	C_GPU_OPS,
	C_CPU_MEM,
	C_SELF_CPU_MEM,
	C_CUDA_MEM,
	C_SELF_CUDA_MEM,
	C_FLOPS,
	C_GFLOPS,
	C_PID,
	C_SCOPE,
	C_NAME,
	C_SHAPES,
	C_STACK,
	NCOLS,
};

/* What a column of torch_op_sum needs (its `when`): mem's records, input shapes, --group-by. */
enum { OP_MEM = 1, OP_FLOPS = 2, OP_BY_SHAPE = 4, OP_BY_STACK = 8 };

/* The columns: key_averages' (memory with mem's records, FLOPs with input shapes). */
static const struct table_col op_sum_cols[NCOLS] = {
	[C_SELF_PCT] = { "self_cpu_pct", "Self CPU (%)", TABLE_DOUBLE },
	[C_SELF] = { "cpu_self_ns", "Self CPU (ns)", TABLE_U64 },
	[C_TOTAL] = { "cpu_total_ns", "CPU Total (ns)", TABLE_U64 },
	[C_COUNT] = { "count", "Calls", TABLE_U64 },
	[C_AVG] = { "cpu_avg_ns", "CPU Avg (ns)", TABLE_DOUBLE },
	[C_MAX] = { "cpu_max_ns", "CPU Max (ns)", TABLE_U64 },
	[C_GPU_SELF] = { "gpu_self_ns", "Self GPU (ns)", TABLE_U64, TABLE_COL_IF_ANY },
	[C_GPU_TOTAL] = { "gpu_total_ns", "GPU Total (ns)", TABLE_U64, TABLE_COL_IF_ANY },
	[C_GPU_OPS] = { "gpu_ops", "GPU Ops", TABLE_U64, TABLE_COL_IF_ANY },
	/* key_averages' columns, the order its table prints them */
	[C_CPU_MEM] = { "cpu_mem_bytes", "CPU Mem", TABLE_S64, .when = OP_MEM },
	[C_SELF_CPU_MEM] = { "self_cpu_mem_bytes", "Self CPU Mem", TABLE_S64, .when = OP_MEM },
	[C_CUDA_MEM] = { "cuda_mem_bytes", "CUDA Mem", TABLE_S64, .when = OP_MEM },
	[C_SELF_CUDA_MEM] = { "self_cuda_mem_bytes", "Self CUDA Mem", TABLE_S64, .when = OP_MEM },
	[C_FLOPS] = { "flops", "Total FLOPs", TABLE_U64, .when = OP_FLOPS },
	[C_GFLOPS] = { "gflops_per_s", "GFLOP/s", TABLE_DOUBLE, .precision = 3, .when = OP_FLOPS },
	[C_PID] = { "pid", "PID", TABLE_U64 },
	[C_SCOPE] = { "scope", "Scope", TABLE_STR },
	[C_NAME] = { "name", "Name", TABLE_STR },
	[C_SHAPES] = { "input_shapes", "Input Shapes", TABLE_STR, .when = OP_BY_SHAPE },
	[C_STACK] = { "stack", "Source Location", TABLE_STR, .when = OP_BY_STACK },
};

/* The OP_* of a table with memory, FLOPs and rows grouped BY. */
static unsigned op_sum__options(int with_mem, int with_flops, enum torch_group_by by)
{
	return (with_mem ? OP_MEM : 0) | (with_flops ? OP_FLOPS : 0) |
	       (by == TORCH_GROUP_SHAPE ? OP_BY_SHAPE : 0) |
	       (by == TORCH_GROUP_STACK ? OP_BY_STACK : 0);
}

/* FLOPs per second of R: over the GPU time of the work inside it, else over its CPU time. */
static double gflops_per_s(const struct torch_op_group *r)
{
	__u64 ns = r->gpu_total ? r->gpu_total : r->cpu_total;

	return ns ? (double)r->flops / (double)ns : 0.0;
}

static void op_sum__row(struct table *t, const int *c, const struct torch_op_group *r,
			long double self_all)
{
	table__row(t);
	table__set_double(t, c[C_SELF_PCT], self_all ? 100.0L * r->cpu_self / self_all : 0.0);
	table__set_u64(t, c[C_SELF], r->cpu_self);
	table__set_u64(t, c[C_TOTAL], r->cpu_total);
	table__set_u64(t, c[C_COUNT], r->count);
	table__set_double(t, c[C_AVG], r->count ? (double)r->cpu_total / r->count : 0.0);
	table__set_u64(t, c[C_MAX], r->cpu_max);
	table__set_u64(t, c[C_GPU_SELF], r->gpu_self);
	table__set_u64(t, c[C_GPU_TOTAL], r->gpu_total);
	table__set_u64(t, c[C_GPU_OPS], r->gpu_ops);
	if (c[C_CPU_MEM] >= 0) {
		table__set_s64(t, c[C_CPU_MEM], r->cpu_mem);
		table__set_s64(t, c[C_SELF_CPU_MEM], r->self_cpu_mem);
		table__set_s64(t, c[C_CUDA_MEM], r->cuda_mem);
		table__set_s64(t, c[C_SELF_CUDA_MEM], r->self_cuda_mem);
	}
	if (c[C_FLOPS] >= 0 && r->name) {
		table__set_u64(t, c[C_FLOPS], r->flops);
		table__set_double(t, c[C_GFLOPS], gflops_per_s(r));
	}
	if (r->pid)
		table__set_u64(t, c[C_PID], r->pid);
	table__set_str(t, c[C_SCOPE], r->scope);
	table__set_str(t, c[C_NAME], r->name ? r->name : MEMORY_ROW);
	if (c[C_SHAPES] >= 0)
		table__set_str(t, c[C_SHAPES], r->by);
	if (c[C_STACK] >= 0)
		table__set_str(t, c[C_STACK], r->by);
}

/* --group-by's key for torch_op_sum (stats checked it is one of op_sum_groups). */
static enum torch_group_by group_of(const struct report_ask *ask)
{
	if (!ask->group_by)
		return TORCH_GROUP_NAME;
	return strcmp(ask->group_by, "shape") ? TORCH_GROUP_STACK : TORCH_GROUP_SHAPE;
}

/* Under the table: the FLOPs of them all, and what is left out of the rows. */
static void op_sum__notes(struct table *t, const struct torch_ops *ops,
			  const struct torch_op_groups *g)
{
	__u64 flops = 0, ns = 0, merged = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (!g->v[i].flops)
			continue;
		flops += g->v[i].flops;
		ns += g->v[i].gpu_total ? g->v[i].gpu_total : g->v[i].cpu_total;
	}
	for (size_t i = 0; i < ops->nops; i++)
		merged += ops->ops[i].merged;
	if (flops)
		table__add_note(t,
				"FLOPs (torch.profiler's formulas: conv2d, mm, addmm, bmm, "
				"baddbmm, mul, add): %.3f GFLOP in all, %.1f GFLOP/s over those "
				"ops' time (the GPU time of their work, else their CPU time).",
				flops / 1e9, ns ? (double)flops / (double)ns : 0.0);
	if (merged)
		table__add_note(t,
				"%llu ops that are the only child of an op of the same name are "
				"counted in it, as key_averages() merges them (dump shows each).",
				(unsigned long long)merged);
}

/*
 * --group-by shape of a trace without input shapes: every row would be "[]" without a word.
 * Said on stderr (JSON and CSV have no notes) and under the table.
 */
static void no_shapes(struct table *t)
{
	static const char why[] = "no op has input shapes: the trace was recorded without "
				  "--torch-shapes (record with it to group by shape); the rows "
				  "are by name";

	pr_warn("torch_op_sum --group-by shape: %s\n", why);
	table__add_note(t, "--group-by shape: %s.", why);
}

static int any_stack(const struct torch_op_groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].by && *g->v[i].by)
			return 1;
	return 0;
}

static void no_stacks(struct table *t)
{
	static const char why[] = "no op has a Python stack: the trace was recorded without "
				  "them (record with --stacks=torch); the rows are by name";

	pr_warn("torch_op_sum --group-by stack: %s\n", why);
	table__add_note(t, "--group-by stack: %s.", why);
}

static int op_sum__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			    struct table *t)
{
	struct op_report *st = vst;
	const struct torch_op_mem *mm = st->t->mem;
	int with_mem = mm && mm->seen, with_flops = 0, c[NCOLS], err;
	enum torch_group_by by = group_of(ask);
	struct torch_op_groups g = { 0 };
	long double self_all = 0;

	if (st->err)
		return st->err;
	err = torch_ops__join(st->t);
	if (!err)
		err = torch_op_groups__make(&g, st->t, m, by, ask->group_n);
	if (err)
		goto out;
	for (size_t i = 0; i < st->t->nops && !with_flops; i++)
		with_flops = !!st->t->ops[i].shapes;
	for (size_t i = 0; i < g.n; i++)
		self_all += g.v[i].cpu_self;
	table__add_cols_when(t, op_sum_cols, NCOLS, op_sum__options(with_mem, with_flops, by), c);
	for (size_t i = 0; i < g.n; i++)
		op_sum__row(t, c, &g.v[i], self_all);
	/* torch.profiler's "[memory]": a call of no time per event in no op's time */
	if (mm && mm->seen && mm->loose)
		op_sum__row(t, c,
			    &(struct torch_op_group){ .count = mm->loose,
						      .cpu_mem = mm->loose_cpu,
						      .self_cpu_mem = mm->loose_cpu,
						      .cuda_mem = mm->loose_cuda,
						      .self_cuda_mem = mm->loose_cuda },
			    self_all);
	op_sum__notes(t, st->t, &g);
	if (by == TORCH_GROUP_SHAPE && !with_flops && st->t->nops)
		no_shapes(t);
	else if (by == TORCH_GROUP_STACK && st->t->nops && !any_stack(&g))
		no_stacks(t);
	err = table__err(t);
out:
	torch_op_groups__free(&g);
	return err;
}

static int op_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return op_sum__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

static const char *const op_sum_groups[] = { "shape", "stack:N", NULL };

static const struct report torch_op_sum = {
	.name = "torch_op_sum",
	.desc = "PyTorch op summary (torch.profiler's key_averages)",
	.new = op_sum__new,
	.add = op_report__add,
	.emit = op_sum__emit,
	.free = op_report__free,
	.emit_for = op_sum__emit_for,
	.group_by = op_sum_groups,
};

/* ---- torch_op_kernels ---- */

static int op_kernels__emit(void *vst, const struct trace_model *m, struct table *t)
{
	/* nsys's timing columns over the GPU time, as cuda_gpu_kern_sum's */
	enum { C_OP = TIME_SUM_NCOLS, C_KERNEL, NCOLS };
	static const struct table_col cols[NCOLS] = {
		TIME_SUM_COLS("Instances"),
		[C_OP] = { "op", "Op", TABLE_STR },
		[C_KERNEL] = { "kernel", "Kernel", TABLE_STR },
	};
	struct op_report *st = vst;
	struct tgroup **rows = NULL, *row;
	struct tgroups *g;
	int err;
	size_t n = 0;

	if (st->err)
		return st->err;
	g = tgroups__new();
	err = g ? torch_ops__join(st->t) : -ENOMEM;
	for (size_t i = 0; !err && i < st->t->ngpu; i++) {
		const struct torch_gpu_row *k = &st->t->gpu[i];

		row = tgroups__get(g, k->op < 0 ? "[no op]" : st->t->ops[k->op].name, k->name, 0);
		if (!row || tgroup__add(row, 0, k->dur))
			err = -ENOMEM;
	}
	if (!err && !(rows = tgroups__sorted(g, 0, &n)))
		err = -ENOMEM;
	if (err)
		goto out;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		struct tstat *s = &rows[i]->st[0];

		table__row(t);
		time_sum__set(t, s->count, s->total, s->min, s->max, &s->samples,
			      tgroups__grand(g, 0));
		table__set_str(t, C_OP, rows[i]->name);
		table__set_str(t, C_KERNEL, rows[i]->name2);
	}
	err = table__err(t);
out:
	free(rows);
	tgroups__free(g);
	return err;
}

static const struct report torch_op_kernels = {
	.name = "torch_op_kernels",
	.desc = "PyTorch op -> GPU kernels, copies and memsets it launched",
	.new = op_report__new,
	.add = op_report__add,
	.emit = op_kernels__emit,
	.free = op_report__free,
};

const struct report *const torch_reports[] = {
	&torch_op_sum,
	&torch_op_kernels,
	&torch_step_sum,
	NULL,
};
