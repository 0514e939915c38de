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
#include "torch_op_mem.h"
#include "torch_ops.h"

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

enum { OS_CPU, OS_SELF, OS_GPU_TOTAL, OS_GPU_SELF }; /* OS_GPU_SELF: one sample per GPU op */

/* key_averages' memory columns of one row: the sums over its ops. */
struct mem_sum {
	const char *name, *scope;
	__s64 self_cpu, cpu, self_cuda, cuda;
};

#define MEMORY_ROW "[memory]" /* torch.profiler's name for memory in no op's time */

static int mem_sum_cmp(const void *x, const void *y)
{
	const struct mem_sum *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	return c ? c : strcmp(a->scope, b->scope);
}

/* The ops' memory summed by (name, scope), sorted for mem_sum_of; *N rows. NULL: no memory. */
static struct mem_sum *mem_sums(const struct torch_ops *t, size_t *n)
{
	struct mem_sum *v = malloc((t->nops ? t->nops : 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < t->nops; i++) {
		const struct torch_op_row *o = &t->ops[i];

		v[i] = (struct mem_sum){ o->name,    torch_scope_name(o->scope), o->self_cpu_mem,
					 o->cpu_mem, o->self_cuda_mem,		 o->cuda_mem };
	}
	if (t->nops)
		qsort(v, t->nops, sizeof(*v), mem_sum_cmp);
	for (size_t i = 0; i < t->nops; i++) {
		if (k && !mem_sum_cmp(&v[k - 1], &v[i])) {
			v[k - 1].self_cpu += v[i].self_cpu;
			v[k - 1].cpu += v[i].cpu;
			v[k - 1].self_cuda += v[i].self_cuda;
			v[k - 1].cuda += v[i].cuda;
		} else {
			v[k++] = v[i];
		}
	}
	*n = k;
	return v;
}

/* Row R's memory: its ops', or (the "[memory]" row) the events in no op's time. */
static struct mem_sum mem_sum_of(const struct mem_sum *v, size_t n, const struct tgroup *r,
				 const struct torch_op_mem *mm)
{
	struct mem_sum key = { r->name, r->name2 }, none = { 0 }, *found;

	if (!r->name2) /* the memory row: ops always have a scope */
		return (struct mem_sum){ .self_cpu = mm->loose_cpu,
					 .cpu = mm->loose_cpu,
					 .self_cuda = mm->loose_cuda,
					 .cuda = mm->loose_cuda };
	found = bsearch(&key, v, n, sizeof(*v), mem_sum_cmp);
	return found ? *found : none;
}

/* Groups by name: quantities above. */
static struct tgroups *op_groups(struct torch_ops *t)
{
	struct tgroups *g = tgroups__new();
	struct tgroup *row;

	for (size_t i = 0; g && i < t->nops; i++) {
		const struct torch_op_row *o = &t->ops[i];

		row = tgroups__get(g, o->name, torch_scope_name(o->scope), 0);
		if (!row || tgroup__add(row, OS_CPU, o->dur) ||
		    tgroup__add(row, OS_SELF, o->self_ns) ||
		    tgroup__add(row, OS_GPU_TOTAL, o->gpu_total_ns))
			goto fail;
	}
	for (size_t i = 0; g && i < t->ngpu; i++) {
		const struct torch_op_row *o;

		if (t->gpu[i].op < 0)
			continue;
		o = &t->ops[t->gpu[i].op];
		row = tgroups__get(g, o->name, torch_scope_name(o->scope), 0);
		if (!row || tgroup__add(row, OS_GPU_SELF, t->gpu[i].dur))
			goto fail;
	}
	/* torch.profiler's "[memory]": a call of no time per event in no op's time */
	for (__u64 i = 0; g && t->mem && t->mem->seen && i < t->mem->loose; i++) {
		row = tgroups__get(g, MEMORY_ROW, NULL, 0);
		if (!row || tgroup__add(row, OS_CPU, 0))
			goto fail;
	}
	return g;
fail:
	tgroups__free(g);
	return NULL;
}

static int op_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct op_report *st = vst;
	const struct torch_op_mem *mm = st->t->mem;
	int with_mem = mm && mm->seen;
	struct mem_sum *mem = NULL;
	struct tgroup **rows = NULL;
	struct tgroups *g = NULL;
	long double self_all;
	int c[15] = { 0 }, err;
	size_t n, nmem = 0;

	if (st->err)
		return st->err;
	err = torch_ops__join(st->t);
	if (!err && !(g = op_groups(st->t)))
		err = -ENOMEM;
	if (!err && !(rows = tgroups__sorted(g, OS_CPU, &n)))
		err = -ENOMEM;
	if (!err && with_mem && !(mem = mem_sums(st->t, &nmem)))
		err = -ENOMEM;
	if (err)
		goto out;
	self_all = tgroups__grand(g, OS_SELF);
	c[0] = table__add_col(t, "self_cpu_pct", "Self CPU (%)", TABLE_DOUBLE);
	c[1] = table__add_col(t, "cpu_self_ns", "Self CPU (ns)", TABLE_U64);
	c[2] = table__add_col(t, "cpu_total_ns", "CPU Total (ns)", TABLE_U64);
	c[3] = table__add_col(t, "count", "Calls", TABLE_U64);
	c[4] = table__add_col(t, "cpu_avg_ns", "CPU Avg (ns)", TABLE_DOUBLE);
	c[5] = table__add_col(t, "cpu_max_ns", "CPU Max (ns)", TABLE_U64);
	c[6] = table__add_col(t, "gpu_self_ns", "Self GPU (ns)", TABLE_U64);
	c[7] = table__add_col(t, "gpu_total_ns", "GPU Total (ns)", TABLE_U64);
	c[8] = table__add_col(t, "gpu_ops", "GPU Ops", TABLE_U64);
	if (with_mem) { /* key_averages' columns, the order its table prints them */
		c[11] = table__add_col(t, "cpu_mem_bytes", "CPU Mem", TABLE_S64);
		c[12] = table__add_col(t, "self_cpu_mem_bytes", "Self CPU Mem", TABLE_S64);
		c[13] = table__add_col(t, "cuda_mem_bytes", "CUDA Mem", TABLE_S64);
		c[14] = table__add_col(t, "self_cuda_mem_bytes", "Self CUDA Mem", TABLE_S64);
	}
	c[9] = table__add_col(t, "scope", "Scope", TABLE_STR);
	c[10] = table__add_col(t, "name", "Name", TABLE_STR);
	for (size_t i = 0; i < n; i++) {
		const struct tstat *cpu = &rows[i]->st[OS_CPU];

		table__row(t);
		table__set_double(t, c[0],
				  self_all ? 100.0L * rows[i]->st[OS_SELF].total / self_all : 0.0);
		table__set_u64(t, c[1], rows[i]->st[OS_SELF].total);
		table__set_u64(t, c[2], cpu->total);
		table__set_u64(t, c[3], cpu->count);
		table__set_double(t, c[4], (double)cpu->total / cpu->count);
		table__set_u64(t, c[5], cpu->max);
		table__set_u64(t, c[6], rows[i]->st[OS_GPU_SELF].total);
		table__set_u64(t, c[7], rows[i]->st[OS_GPU_TOTAL].total);
		table__set_u64(t, c[8], rows[i]->st[OS_GPU_SELF].count);
		table__set_str(t, c[9], rows[i]->name2);
		table__set_str(t, c[10], rows[i]->name);
		if (with_mem) {
			struct mem_sum ms = mem_sum_of(mem, nmem, rows[i], mm);

			table__set_s64(t, c[11], ms.cpu);
			table__set_s64(t, c[12], ms.self_cpu);
			table__set_s64(t, c[13], ms.cuda);
			table__set_s64(t, c[14], ms.self_cuda);
		}
	}
	err = table__err(t);
out:
	free(mem);
	free(rows);
	tgroups__free(g);
	return err;
}

static const struct report torch_op_sum = {
	.name = "torch_op_sum",
	.desc = "PyTorch op summary (torch.profiler's key_averages)",
	.new = op_sum__new,
	.add = op_report__add,
	.emit = op_sum__emit,
	.free = op_report__free,
};

/* ---- torch_op_kernels ---- */

static int op_kernels__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct op_report *st = vst;
	struct tgroup **rows = NULL, *row;
	struct tgroups *g;
	int c[TIME_SUM_NCOLS + 2], err;
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
	/* nsys's timing columns over the GPU time, as cuda_gpu_kern_sum's */
	time_sum__cols_counting(t, c, "Instances");
	c[TIME_SUM_NCOLS] = table__add_col(t, "op", "Op", TABLE_STR);
	c[TIME_SUM_NCOLS + 1] = table__add_col(t, "kernel", "Kernel", TABLE_STR);
	for (size_t i = 0; i < n; i++) {
		struct tstat *s = &rows[i]->st[0];

		table__row(t);
		time_sum__set(t, c, s->count, s->total, s->min, s->max, &s->samples,
			      tgroups__grand(g, 0));
		table__set_str(t, c[TIME_SUM_NCOLS], rows[i]->name);
		table__set_str(t, c[TIME_SUM_NCOLS + 1], rows[i]->name2);
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
