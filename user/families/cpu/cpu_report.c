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

/*
 * What a row is. For people (table mode) an unnamed native frame is its module's row and a
 * Python frame gone before it was read one row of its own: one row per address says nothing.
 */
static struct hkey func_key(const struct bs_frame *f, unsigned flags)
{
	if (f->func_id && f->kind == BS_FRAME_PYTHON)
		return (struct hkey){ f->func_id | (__u64)f->line << 32,
				      (__u64)f->file_id << 32 | f->kind };
	if (f->func_id)
		return (struct hkey){ f->func_id, (__u64)f->file_id << 32 | f->kind };
	/* A marker's line is why the walk stopped: two reasons are two rows. */
	if (f->kind == BS_FRAME_CUT)
		return (struct hkey){ f->line, (__u64)f->file_id << 32 | f->kind };
	if (flags & REPORT_FOR_PEOPLE)
		return (struct hkey){ 0, (__u64)f->file_id << 32 | f->kind };
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
/* --python: samples with no Python frame on their stack (native threads, or before main). */
static const struct bs_frame no_python_frame = { .kind = STACK_FRAME_NO_PYTHON };

struct cpu_emit {
	struct hmap *funcs;
	unsigned flags;
	__u64 cut;	     /* people: samples whose native unwind stopped early */
	struct hmap *cut_at; /* {module's string id, 0} -> __u64 samples stopped there */
	int err;
};

static struct cpu_func *func_of(struct cpu_emit *e, const struct bs_frame *fr)
{
	struct cpu_func *f = hmap__get(e->funcs, func_key(fr, e->flags), 1);

	if (!f)
		e->err = -ENOMEM;
	else if (!f->frame)
		f->frame = fr;
	return f;
}

static void count(struct cpu_func *f, int self, __u64 id, __u64 n)
{
	if (self)
		f->self += n;
	if (f->last != id) {
		f->last = id;
		f->total += n;
	}
}

static void add_stack(struct cpu_emit *e, const struct trace_stack *s, __u64 id, int kernel,
		      __u64 n)
{
	int python = !!(e->flags & REPORT_PYTHON), leaf = !kernel || python, cut = 0;
	struct cpu_func *f;

	if (kernel && !python && (f = func_of(e, &kernel_frame)))
		count(f, 1, id, n);
	for (__u32 i = 0; s && i < s->nframes && !e->err; i++) {
		const struct bs_frame *fr = &s->frames[i];

		if (python && fr->kind != BS_FRAME_PYTHON)
			continue;
		if (fr->kind == BS_FRAME_CUT && (e->flags & REPORT_FOR_PEOPLE)) {
			/* Not a function: said under the table, never ranked. */
			__u64 *at = hmap__get(e->cut_at, (struct hkey){ fr->file_id, 0 }, 1);

			if (!at)
				e->err = -ENOMEM;
			else if (!cut++) {
				e->cut += n;
				*at += n;
			}
			continue;
		}
		if ((f = func_of(e, fr)))
			count(f, leaf, id, n);
		leaf = 0;
	}
	if (python && leaf && (f = func_of(e, &no_python_frame)))
		count(f, 1, id, n);
}

/* A row's function: a module's unnamed code as "[MODULE]" when grouped. */
static const char *row_func(const struct bs_frame *fr, const struct trace_model *m, unsigned flags,
			    char *buf, size_t len)
{
	const char *file = stack_frame__file(fr, m), *b = strrchr(file, '/');

	if (fr->kind == STACK_FRAME_NO_PYTHON)
		return "[no Python frame]";
	if ((flags & REPORT_FOR_PEOPLE) && fr->kind == BS_FRAME_NATIVE && !fr->func_id) {
		snprintf(buf, len, "[%s]", *file ? (b ? b + 1 : file) : "unknown code");
		return buf;
	}
	if ((flags & REPORT_FOR_PEOPLE) && fr->kind == BS_FRAME_PYTHON && !fr->func_id)
		return "[python code gone before it was read]";
	return stack_frame__func(fr, m, buf, len);
}

static void note_cut(const struct cpu_emit *e, const struct trace_model *m, __u64 samples,
		     struct table *t)
{
	__u64 *v, best = 0;
	const char *file = NULL, *b;
	struct hkey key;
	char note[512];
	size_t it = 0;

	if (!e->cut)
		return;
	while ((v = hmap__next(e->cut_at, &it, &key)))
		if (*v > best) {
			best = *v;
			file = trace_model__string(m, (__u32)key.a);
		}
	b = file ? strrchr(file, '/') : NULL;
	snprintf(note, sizeof(note),
		 "In %.1f%% of the samples the native unwind stopped (mostly in %s: code without "
		 "frame pointers before its unwind table was loaded, or a stop the table said; "
		 "the marker frames say which): native callers above it are not known; Python "
		 "frames are read apart and are whole.",
		 100.0 * e->cut / samples,
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
	struct cpu_emit e = { .funcs = hmap__new(sizeof(struct cpu_func)),
			      .cut_at = hmap__new(sizeof(__u64)),
			      .flags = ask->flags };
	struct cpu_sum *st = vst;
	struct cpu_row *rows = NULL;
	struct cpu_func *f;
	size_t it = 0, n = 0;
	struct hkey key;
	char buf[512];
	__u64 *cnt;

	if (!e.funcs || !e.cut_at) {
		hmap__free(e.funcs);
		hmap__free(e.cut_at);
		return -ENOMEM;
	}
	e.err = st->err;
	while (!e.err && (cnt = hmap__next(st->per_stack, &it, &key))) {
		const struct trace_stack *s = trace_model__stack(m, (__u32)key.a);

		if (s || key.b)
			add_stack(&e, s, key.a << 1 | key.b, (int)key.b, *cnt);
	}
	rows = e.err ? NULL : calloc(hmap__count(e.funcs) + 1, sizeof(*rows));
	if (!e.err && !rows)
		e.err = -ENOMEM;
	for (it = 0; !e.err && (f = hmap__next(e.funcs, &it, NULL));)
		rows[n++].f = f;
	if (!e.err) {
		qsort(rows, n, sizeof(*rows), cpu_row_cmp);
		table__add_cols(t, cols, NCOLS);
		for (size_t i = 0; i < n; i++) {
			const struct bs_frame *fr = rows[i].f->frame;

			table__row(t);
			table__set_str(t, C_FUNC, row_func(fr, m, ask->flags, buf, sizeof(buf)));
			table__set_str(t, C_FILE, stack_frame__file(fr, m));
			table__set_u64(t, C_LINE, fr->kind == BS_FRAME_PYTHON ? fr->line : 0);
			table__set_u64(t, C_SELF_SAMPLES, rows[i].f->self);
			table__set_u64(t, C_TOTAL_SAMPLES, rows[i].f->total);
			table__set_double(t, C_SELF_PCT, 100.0 * rows[i].f->self / st->samples);
			table__set_double(t, C_TOTAL_PCT, 100.0 * rows[i].f->total / st->samples);
		}
		note_cut(&e, m, st->samples, t);
		e.err = table__err(t);
	}
	free(rows);
	hmap__free(e.funcs);
	hmap__free(e.cut_at);
	return e.err;
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
