// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda_callsites: the Python lines that made CUDA and NCCL calls, from the calls that carry a
 * stack (--stacks=cuda, --stacks=nccl): per (API, Python function, file, line), the calls
 * and their time. The line is the innermost Python frame of the call's stack; calls whose
 * stack has no Python frame count under the native function that made them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "family.h"
#include "stack_format.h"
#include "table.h"
#include "trace_model.h"

struct site {
	char *api;
	const struct bs_frame *frame; /* the model's */
	__u64 count, total_ns;
};

struct callsites {
	struct site *v;
	size_t n, cap;
	int err;
};

static void *callsites__new(void)
{
	return calloc(1, sizeof(struct callsites));
}

static int same_frame(const struct bs_frame *a, const struct bs_frame *b)
{
	return a->kind == b->kind && a->func_id == b->func_id && a->file_id == b->file_id &&
	       (a->kind == BS_FRAME_PYTHON ? a->line == b->line : a->addr == b->addr);
}

static void callsites__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	const struct trace_stack *s;
	const struct bs_frame *f = NULL;
	struct callsites *st = vst;
	struct event ev;
	struct site *site = NULL;

	if ((rec->type != BS_REC_CUDA_CALL && rec->type != BS_REC_NCCL_CALL) || u->depth)
		return;
	s = trace_model__event_stack(m, rec);
	if (!s || !s->nframes)
		return;
	for (__u32 i = 0; i < s->nframes && !f; i++)
		if (s->frames[i].kind == BS_FRAME_PYTHON)
			f = &s->frames[i];
	if (!f)
		f = &s->frames[0];
	if (family__decode(rec, m, &ev) != 1 || !ev.name)
		return;
	for (size_t i = 0; i < st->n && !site; i++)
		if (!strcmp(st->v[i].api, ev.name) && same_frame(st->v[i].frame, f))
			site = &st->v[i];
	if (!site) {
		if (st->n == st->cap) {
			struct site *nv = realloc(st->v, (st->cap = st->cap * 2 + 16) * sizeof(*nv));

			if (!nv) {
				st->err = -ENOMEM;
				return;
			}
			st->v = nv;
		}
		site = &st->v[st->n];
		*site = (struct site){ .api = strdup(ev.name), .frame = f };
		if (!site->api) {
			st->err = -ENOMEM;
			return;
		}
		st->n++;
	}
	site->count++;
	site->total_ns += u->dur;
}

static int by_total(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->api, y->api);
}

static int callsites__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct callsites *st = vst;
	char buf[512];
	int c[6];

	if (st->err)
		return st->err;
	if (st->n)
		qsort(st->v, st->n, sizeof(*st->v), by_total);
	c[0] = table__add_col(t, "api", "API", TABLE_STR);
	c[1] = table__add_col(t, "func", "Function", TABLE_STR);
	c[2] = table__add_col(t, "file", "File", TABLE_STR);
	c[3] = table__add_col(t, "line", "Line", TABLE_U64);
	c[4] = table__add_col(t, "count", "Calls", TABLE_U64);
	c[5] = table__add_col(t, "total_ns", "Total (ns)", TABLE_U64);
	for (size_t i = 0; i < st->n; i++) {
		const struct bs_frame *f = st->v[i].frame;

		table__row(t);
		table__set_str(t, c[0], st->v[i].api);
		table__set_str(t, c[1], stack_frame__func(f, m, buf, sizeof(buf)));
		table__set_str(t, c[2], stack_frame__file(f, m));
		table__set_u64(t, c[3], f->kind == BS_FRAME_PYTHON ? f->line : 0);
		table__set_u64(t, c[4], st->v[i].count);
		table__set_u64(t, c[5], st->v[i].total_ns);
	}
	return table__err(t);
}

static void callsites__free(void *vst)
{
	struct callsites *st = vst;

	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i].api);
	free(st->v);
	free(st);
}

const struct report cuda_callsites = {
	.name = "cuda_callsites",
	.desc = "CUDA and NCCL Call Sites (calls with --stacks)",
	.new = callsites__new,
	.add = callsites__add,
	.emit = callsites__emit,
	.free = callsites__free,
};
