// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Time summed per (label, code location) (frame_sum.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "frame_sum.h"
#include "stack_format.h"
#include "table.h"
#include "trace_model.h"

void *frame_sum__new(void)
{
	return calloc(1, sizeof(struct frame_sum));
}

void frame_sum__delete(void *fs)
{
	if (fs)
		frame_sum__free(fs);
	free(fs);
}

const struct bs_frame *frame_sum__site(const struct trace_stack *s)
{
	if (!s || !s->nframes)
		return NULL;
	for (__u32 i = 0; i < s->nframes; i++)
		if (s->frames[i].kind == BS_FRAME_PYTHON)
			return &s->frames[i];
	return &s->frames[0];
}

static int same_frame(const struct bs_frame *a, const struct bs_frame *b)
{
	return a->kind == b->kind && a->func_id == b->func_id && a->file_id == b->file_id &&
	       (a->kind == BS_FRAME_PYTHON ? a->line == b->line : a->addr == b->addr);
}

void frame_sum__add(struct frame_sum *fs, const char *label, const struct bs_frame *f, __u64 dur)
{
	struct frame_sum_row *row = NULL;

	if (!f || fs->err)
		return;
	for (__u64 i = 0; i < fs->n && !row; i++)
		if (!strcmp(fs->v[i].label, label) && same_frame(fs->v[i].frame, f))
			row = &fs->v[i];
	if (!row) {
		if (array__grow((void **)&fs->v, fs->n, &fs->cap, sizeof(*fs->v))) {
			fs->err = -ENOMEM;
			return;
		}
		row = &fs->v[fs->n];
		*row = (struct frame_sum_row){ .label = strdup(label), .frame = f };
		if (!row->label) {
			fs->err = -ENOMEM;
			return;
		}
		fs->n++;
	}
	row->count++;
	row->total_ns += dur;
}

static int by_total(const void *a, const void *b)
{
	const struct frame_sum_row *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->label, y->label);
}

int frame_sum__emit(struct frame_sum *fs, const struct trace_model *m, struct table *t,
		    const char *label_key, const char *label_title)
{
	enum { C_LABEL, C_FUNC, C_FILE, C_LINE, C_COUNT, C_TOTAL, NCOLS };
	const struct table_col cols[NCOLS] = {
		[C_LABEL] = { label_key, label_title, TABLE_STR }, /* the caller's */
		[C_FUNC] = { "func", "Function", TABLE_STR },
		[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
		[C_LINE] = { "line", "Line", TABLE_U64 },
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_TOTAL] = { "total_ns", "Total (ns)", TABLE_U64 },
	};
	char buf[512];

	if (fs->err)
		return fs->err;
	if (fs->n)
		qsort(fs->v, fs->n, sizeof(*fs->v), by_total);
	table__add_cols(t, cols, NCOLS);
	for (__u64 i = 0; i < fs->n; i++) {
		const struct bs_frame *f = fs->v[i].frame;

		table__row(t);
		table__set_str(t, C_LABEL, fs->v[i].label);
		table__set_str(t, C_FUNC, stack_frame__func(f, m, buf, sizeof(buf)));
		table__set_str(t, C_FILE, stack_frame__file(f, m));
		table__set_u64(t, C_LINE, f->kind == BS_FRAME_PYTHON ? f->line : 0);
		table__set_u64(t, C_COUNT, fs->v[i].count);
		table__set_u64(t, C_TOTAL, fs->v[i].total_ns);
	}
	return table__err(t);
}

void frame_sum__free(struct frame_sum *fs)
{
	for (__u64 i = 0; i < fs->n; i++)
		free(fs->v[i].label);
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}
