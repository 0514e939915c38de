// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cpu: samples as events (with their stack), and cpu_sum: per function, the
 * samples it was running in (self) and on the stack of (total), as py-spy top and cProfile's
 * tottime/cumtime, summed by func_sum.h (top's function view sums them so too).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include "cpu.h"
#include "func_sum.h"
#include "stack_format.h"
#include "hmap.h"
#include "table.h"
#include "trace_model.h"
#include "report.h"

static int decode_sample(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_cpu_sample *s = (const void *)rec;

	ev->name = s->flags & BS_CPU_KERNEL ? "kernel" : "user";
	ev->stack = trace_model__stack(m, s->stack_id);
	ev->stack_in_kernel = !!(s->flags & BS_CPU_KERNEL);
	ev->stack_id = s->stack_id;
	event__arg_u64(ev, "cpu", rec->cpu);
	event__arg_u64(ev, "stack_id", s->stack_id);
	/* Only where set: a trace of an older recorder did not tell faults apart. */
	if (s->flags & BS_CPU_FAULT)
		event__arg_bool(ev, "page_fault", 1);
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

struct cpu_row {
	const struct func_sum_row *f;
};

static int cpu_row_cmp(const void *a, const void *b)
{
	const struct func_sum_row *x = ((const struct cpu_row *)a)->f,
				  *y = ((const struct cpu_row *)b)->f;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->frame->kind != y->frame->kind)
		return x->frame->kind < y->frame->kind ? -1 : 1;
	if (x->frame->func_id != y->frame->func_id)
		return x->frame->func_id < y->frame->func_id ? -1 : 1;
	/* then what tells rows apart (func_key): one order, the server's SQL's too */
	if (x->frame->file_id != y->frame->file_id)
		return x->frame->file_id < y->frame->file_id ? -1 : 1;
	if (x->frame->line != y->frame->line)
		return x->frame->line < y->frame->line ? -1 : 1;
	return x->frame->addr < y->frame->addr ? -1 : x->frame->addr > y->frame->addr;
}

static void note_cut(const struct func_sum *fs, const struct trace_model *m, __u64 samples,
		     struct table *t)
{
	const char *file, *b;
	char note[512];
	__u32 module;
	__u64 cut = func_sum__cut(fs, &module);

	if (!cut)
		return;
	file = trace_model__string(m, module);
	b = file ? strrchr(file, '/') : NULL;
	snprintf(note, sizeof(note),
		 "In %.1f%% of the samples the native unwind stopped (mostly in %s: code without "
		 "frame pointers before its unwind table was loaded, or a stop the table said; "
		 "the marker frames say which): native callers above it are not known; Python "
		 "frames are read apart and are whole.",
		 100.0 * cut / samples,
		 b	? b + 1
		 : file ? file
			: "unknown code");
	table__add_note(t, "%s", note);
}

static int cpu_sum__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			     struct table *t)
{
	enum {
		C_FUNC,
		C_FILE,
		C_LINE,
		C_SELF_SAMPLES,
		C_TOTAL_SAMPLES,
		C_SELF_PCT,
		C_TOTAL_PCT,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_FUNC] = { "func", "Function", TABLE_STR },
		[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
		[C_LINE] = { "line", "Line", TABLE_U64 },
		[C_SELF_SAMPLES] = { "self_samples", "Self", TABLE_U64 },
		[C_TOTAL_SAMPLES] = { "total_samples", "Total", TABLE_U64 },
		[C_SELF_PCT] = { "self_pct", "Self (%)", TABLE_DOUBLE, .precision = 1 },
		[C_TOTAL_PCT] = { "total_pct", "Total (%)", TABLE_DOUBLE, .precision = 1 },
	};
	unsigned flags = (ask->flags & REPORT_FOR_PEOPLE ? FUNC_SUM_GROUP : 0) |
			 (ask->flags & REPORT_PYTHON ? FUNC_SUM_PYTHON : 0);
	struct func_sum *fs = func_sum__new(flags);
	struct cpu_sum *st = vst;
	struct cpu_row *rows = NULL;
	struct func_sum_row *f;
	size_t it = 0, n = 0;
	struct hkey key;
	char buf[512];
	__u64 *cnt;
	int err;

	if (!fs)
		return -ENOMEM;
	err = st->err;
	while (!err && (cnt = hmap__next(st->per_stack, &it, &key))) {
		const struct trace_stack *s = trace_model__stack(m, (__u32)key.a);

		if (s || key.b)
			err = func_sum__add(fs, s, (int)key.b, *cnt);
	}
	rows = err ? NULL : calloc(func_sum__count(fs) + 1, sizeof(*rows));
	if (!err && !rows)
		err = -ENOMEM;
	for (it = 0; !err && (f = func_sum__next(fs, &it));)
		rows[n++].f = f;
	if (!err) {
		qsort(rows, n, sizeof(*rows), cpu_row_cmp);
		table__add_cols(t, cols, NCOLS);
		for (size_t i = 0; i < n; i++) {
			const struct bs_frame *fr = rows[i].f->frame;

			table__row(t);
			table__set_str(t, C_FUNC, func_sum__func(fr, m, flags, buf, sizeof(buf)));
			table__set_str(t, C_FILE, stack_frame__file(fr, m));
			table__set_u64(t, C_LINE, fr->kind == BS_FRAME_PYTHON ? fr->line : 0);
			table__set_u64(t, C_SELF_SAMPLES, rows[i].f->self);
			table__set_u64(t, C_TOTAL_SAMPLES, rows[i].f->total);
			table__set_double(t, C_SELF_PCT, 100.0 * rows[i].f->self / st->samples);
			table__set_double(t, C_TOTAL_PCT, 100.0 * rows[i].f->total / st->samples);
		}
		note_cut(fs, m, st->samples, t);
		err = table__err(t);
	}
	free(rows);
	func_sum__free(fs);
	return err;
}

static int cpu_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return cpu_sum__emit_for(vst, m, &(struct report_ask){ 0 }, t);
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
	.emit_for = cpu_sum__emit_for,
	.free = cpu_sum__free,
};

const struct report *const cpu_reports[] = { &cpu_sum, NULL };
