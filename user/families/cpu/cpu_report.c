// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cpu: samples as events (with their stack), and cpu_sum: per function, the
 * samples it was running in (self) and on the stack of (total), as py-spy top and cProfile's
 * tottime/cumtime. A function counts once per sample however often it recurses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include "cpu.h"
#include "stack_format.h"
#include "stats_math.h"
#include "table.h"
#include "trace_model.h"

static int decode_sample(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_cpu_sample *s = (const void *)rec;

	ev->name = s->flags & BS_CPU_KERNEL ? "kernel" : "user";
	ev->stack = trace_model__stack(m, s->stack_id);
	ev->stack_in_kernel = !!(s->flags & BS_CPU_KERNEL);
	ev->stack_id = s->stack_id;
	event__arg_u64(ev, "cpu", rec->cpu);
	event__arg_u64(ev, "stack_id", s->stack_id);
	/* Only in the processes whose interpreter bpfsight reads: elsewhere it is unknown. */
	if (s->flags & BS_CPU_PYTHON)
		event__arg_bool(ev, "gil", !!(s->flags & BS_CPU_GIL));
	return 1;
}

/* Samples of the thread's stack: the timeline exports draw them as their profilers' samples. */
static const struct export_style sample_style = { .cat = "cpu_sample", .ph = 'i', .sample = 1 };

const struct rec_decoder cpu_decoders[] = {
	{ BS_REC_CPU_SAMPLE, sizeof(struct bs_cpu_sample), "cpu_sample", decode_sample,
	  &sample_style, offsetof(struct bs_cpu_sample, stack_id) },
	{ 0 },
};

/*
 * A row of cpu_sum: a native function (module, name), a Python line (file, function, line:
 * py-spy top's rows), or an unnamed frame's address.
 */
struct cpu_func {
	const struct bs_frame *frame; /* the first frame seen of it (the model's) */
	__u64 self, total;
	__u64 last; /* the (stack << 1 | kernel) that counted it in total last: once per stack */
};

struct cpu_sum {
	struct hmap *per_stack; /* (stack id, kernel) -> __u64 samples */
	__u64 samples;
	int err;
};

static void *cpu_sum__new(void)
{
	struct cpu_sum *st = calloc(1, sizeof(*st));

	if (st && !(st->per_stack = hmap__new(sizeof(__u64)))) {
		free(st);
		st = NULL;
	}
	return st;
}

/* Samples are counted per stack while walking; the functions are added up at emit. */
static void cpu_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_cpu_sample *s = (const void *)rec;
	struct cpu_sum *st = vst;
	__u64 *n;

	if (rec->type != BS_REC_CPU_SAMPLE)
		return;
	st->samples++;
	n = hmap__get(st->per_stack, (struct hkey){ s->stack_id, !!(s->flags & BS_CPU_KERNEL) }, 1);
	if (!n) {
		st->err = -ENOMEM;
		return;
	}
	(*n)++;
}

static struct hkey func_key(const struct bs_frame *f)
{
	if (f->func_id && f->kind == BS_FRAME_PYTHON)
		return (struct hkey){ f->func_id | (__u64)f->line << 32,
				      (__u64)f->file_id << 32 | f->kind };
	if (f->func_id)
		return (struct hkey){ f->func_id, (__u64)f->file_id << 32 | f->kind };
	return (struct hkey){ f->addr, (__u64)f->file_id << 32 | f->kind };
}

struct cpu_row {
	const struct cpu_func *f;
};

static int cpu_row_cmp(const void *a, const void *b)
{
	const struct cpu_func *x = ((const struct cpu_row *)a)->f,
			      *y = ((const struct cpu_row *)b)->f;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->frame->kind != y->frame->kind)
		return x->frame->kind < y->frame->kind ? -1 : 1;
	if (x->frame->func_id != y->frame->func_id)
		return x->frame->func_id < y->frame->func_id ? -1 : 1;
	return x->frame->addr < y->frame->addr ? -1 : x->frame->addr > y->frame->addr;
}

/* Samples taken in kernel code: their own row, the leaf of their stacks (as in the exports). */
static const struct bs_frame kernel_frame = { .kind = STACK_FRAME_KERNEL };

static void add_stack(struct hmap *funcs, const struct trace_stack *s, __u64 id, int kernel,
		      __u64 n, int *err)
{
	struct cpu_func *kf;

	if (kernel) {
		kf = hmap__get(funcs, func_key(&kernel_frame), 1);
		if (!kf) {
			*err = -ENOMEM;
			return;
		}
		kf->frame = &kernel_frame;
		kf->self += n;
		kf->total += n;
	}
	for (__u32 i = 0; s && i < s->nframes; i++) {
		struct cpu_func *f = hmap__get(funcs, func_key(&s->frames[i]), 1);

		if (!f) {
			*err = -ENOMEM;
			return;
		}
		if (!f->frame)
			f->frame = &s->frames[i];
		if (i == 0 && !kernel)
			f->self += n;
		if (f->last != id) {
			f->last = id;
			f->total += n;
		}
	}
}

static int cpu_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct cpu_sum *st = vst;
	struct hmap *funcs = hmap__new(sizeof(struct cpu_func));
	struct cpu_row *rows = NULL;
	struct cpu_func *f;
	size_t it = 0, n = 0;
	struct hkey key;
	char buf[512];
	int c[7], err = st->err;
	__u64 *cnt;

	if (!funcs)
		return -ENOMEM;
	while (!err && (cnt = hmap__next(st->per_stack, &it, &key))) {
		const struct trace_stack *s = trace_model__stack(m, (__u32)key.a);

		if (s || key.b)
			add_stack(funcs, s, key.a << 1 | key.b, (int)key.b, *cnt, &err);
	}
	rows = err ? NULL : calloc(hmap__count(funcs) + 1, sizeof(*rows));
	if (!err && !rows)
		err = -ENOMEM;
	for (it = 0; !err && (f = hmap__next(funcs, &it, NULL));)
		rows[n++].f = f;
	if (!err) {
		qsort(rows, n, sizeof(*rows), cpu_row_cmp);
		c[0] = table__add_col(t, "func", "Function", TABLE_STR);
		c[1] = table__add_col(t, "file", "File", TABLE_STR);
		c[2] = table__add_col(t, "line", "Line", TABLE_U64);
		c[3] = table__add_col(t, "self_samples", "Self", TABLE_U64);
		c[4] = table__add_col(t, "total_samples", "Total", TABLE_U64);
		c[5] = table__add_col(t, "self_pct", "Self (%)", TABLE_DOUBLE);
		c[6] = table__add_col(t, "total_pct", "Total (%)", TABLE_DOUBLE);
		table__set_precision(t, c[5], 1);
		table__set_precision(t, c[6], 1);
		for (size_t i = 0; i < n; i++) {
			const struct bs_frame *fr = rows[i].f->frame;

			table__row(t);
			table__set_str(t, c[0], stack_frame__func(fr, m, buf, sizeof(buf)));
			table__set_str(t, c[1], stack_frame__file(fr, m));
			table__set_u64(t, c[2], fr->kind == BS_FRAME_PYTHON ? fr->line : 0);
			table__set_u64(t, c[3], rows[i].f->self);
			table__set_u64(t, c[4], rows[i].f->total);
			table__set_double(t, c[5], 100.0 * rows[i].f->self / st->samples);
			table__set_double(t, c[6], 100.0 * rows[i].f->total / st->samples);
		}
		err = table__err(t);
	}
	free(rows);
	hmap__free(funcs);
	return err;
}

static void cpu_sum__free(void *vst)
{
	struct cpu_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->per_stack);
	free(st);
}

static const struct report cpu_sum = {
	.name = "cpu_sum",
	.desc = "CPU Samples by Function (self and total)",
	.new = cpu_sum__new,
	.add = cpu_sum__add,
	.emit = cpu_sum__emit,
	.free = cpu_sum__free,
};

const struct report *const cpu_reports[] = { &cpu_sum, NULL };
