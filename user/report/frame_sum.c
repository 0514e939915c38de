// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Time summed per (label, code location) (frame_sum.h). */
#include <errno.h>
#include <stdio.h>
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

/*
 * PATH has a folder ".../lib/python3.X/" or ".../lib64/python3/": an interpreter's own ("lib"
 * then "python" and a digit, a pattern SQL's GLOB can say as well).
 */
static int under_python_lib(const char *path)
{
	static const char *const libs[] = { "/lib/python", "/lib64/python" };

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		for (const char *p = strstr(path, libs[i]); p; p = strstr(p + 1, libs[i]))
			if (p[strlen(libs[i])] >= '0' && p[strlen(libs[i])] <= '9')
				return 1;
	return 0;
}

int frame_sum__library_file(const char *path)
{
	static const char *const parts[] = { "/site-packages/", "/dist-packages/", "/torch/" };

	if (!path || !*path || !strncmp(path, "<frozen ", 8) || under_python_lib(path))
		return 1;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(path, parts[i]))
			return 1;
	return 0;
}

const struct bs_frame *frame_sum__own_site(const struct trace_stack *s, const struct trace_model *m,
					   const struct bs_frame **via)
{
	const struct bs_frame *lib = frame_sum__site(s);

	*via = NULL;
	for (__u32 i = 0; s && i < s->nframes; i++) {
		const struct bs_frame *f = &s->frames[i];

		if (f->kind != BS_FRAME_PYTHON || !f->file_id ||
		    frame_sum__library_file(trace_model__string(m, f->file_id)))
			continue;
		*via = f != lib ? lib : NULL;
		return f;
	}
	return lib;
}

char *frame_sum__stack_text(const struct trace_stack *s, const struct trace_model *m, unsigned n,
			    int (*skip)(const char *entry))
{
	size_t len = 0, cap = 256;
	char *out = malloc(cap), entry[1024];

	if (!out)
		return NULL;
	out[0] = 0;
	for (__u16 i = 0; s && i < s->nframes && n; i++) {
		const struct bs_frame *f = &s->frames[i];
		const char *file = f->file_id ? trace_model__string(m, f->file_id) : NULL;
		const char *func = f->func_id ? trace_model__string(m, f->func_id) : NULL;
		size_t k;

		if (f->kind != BS_FRAME_PYTHON)
			continue;
		k = (size_t)snprintf(entry, sizeof(entry), "%s(%u): %s", file ? file : "?", f->line,
				     func ? func : "?");
		if (k >= sizeof(entry) || (skip && skip(entry)))
			continue;
		if (len + k + 3 > cap) {
			char *more = realloc(out, (len + k + 3) * 2);

			if (!more) {
				free(out);
				return NULL;
			}
			out = more;
			cap = (len + k + 3) * 2;
		}
		len += (size_t)sprintf(out + len, "%s%s", len ? "; " : "", entry);
		n--;
	}
	return out;
}

static int same_frame(const struct bs_frame *a, const struct bs_frame *b)
{
	return a->kind == b->kind && a->func_id == b->func_id && a->file_id == b->file_id &&
	       (a->kind == BS_FRAME_PYTHON ? a->line == b->line : a->addr == b->addr);
}

/* Whether frames A and B (either may be NULL) are the same. */
static int same_or_none(const struct bs_frame *a, const struct bs_frame *b)
{
	return a == b || (a && b && same_frame(a, b));
}

void frame_sum__add(struct frame_sum *fs, const char *label, const struct trace_stack *s,
		    const struct trace_model *m, __u64 dur)
{
	const struct bs_frame *via, *f = frame_sum__own_site(s, m, &via);
	struct frame_sum_row *row = NULL;

	if (!f || fs->err)
		return;
	for (__u64 i = 0; i < fs->n && !row; i++)
		if (!strcmp(fs->v[i].label, label) && same_frame(fs->v[i].frame, f) &&
		    same_or_none(fs->v[i].via, via))
			row = &fs->v[i];
	if (!row) {
		if (array__grow((void **)&fs->v, fs->n, &fs->cap, sizeof(*fs->v))) {
			fs->err = -ENOMEM;
			return;
		}
		row = &fs->v[fs->n];
		*row = (struct frame_sum_row){ .label = strdup(label), .frame = f, .via = via };
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
	enum {
		C_LABEL,
		C_FUNC,
		C_FILE,
		C_LINE,
		C_VIA_FUNC,
		C_VIA_FILE,
		C_VIA_LINE,
		C_COUNT,
		C_TOTAL,
		NCOLS
	};
	const struct table_col cols[NCOLS] = {
		[C_LABEL] = { label_key, label_title, TABLE_STR }, /* the caller's */
		[C_FUNC] = { "func", "Function", TABLE_STR },
		[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
		[C_LINE] = { "line", "Line", TABLE_U64 },
		[C_VIA_FUNC] = { "via_func", "Via", TABLE_STR, TABLE_COL_MINOR | TABLE_COL_IF_ANY },
		[C_VIA_FILE] = { "via_file", "Via File", TABLE_STR,
				 TABLE_COL_PATH | TABLE_COL_MINOR | TABLE_COL_IF_ANY },
		[C_VIA_LINE] = { "via_line", "Via Line", TABLE_U64,
				 TABLE_COL_MINOR | TABLE_COL_IF_ANY },
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
		if (fs->v[i].via) {
			f = fs->v[i].via;
			table__set_str(t, C_VIA_FUNC, stack_frame__func(f, m, buf, sizeof(buf)));
			table__set_str(t, C_VIA_FILE, stack_frame__file(f, m));
			table__set_u64(t, C_VIA_LINE, f->kind == BS_FRAME_PYTHON ? f->line : 0);
		}
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
