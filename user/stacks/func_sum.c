// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Samples of stacks summed per function (func_sum.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "func_sum.h"
#include "hmap.h"
#include "stack_format.h"
#include "trace_model.h"

struct func_sum {
	unsigned flags;
	struct hmap *funcs;  /* func_key -> struct func_sum_row */
	struct hmap *cut_at; /* {module's string id, 0} -> __u64 samples stopped there */
	__u64 cut;	     /* samples whose native unwind stopped early (FUNC_SUM_GROUP) */
	__u64 adds;	     /* func_sum__add calls: a stack's id for counting totals once */
};

/* Samples taken in kernel code: their own row, the leaf of their stacks (as in the exports). */
static const struct bs_frame kernel_frame = { .kind = STACK_FRAME_KERNEL };
/* FUNC_SUM_PYTHON: samples with no Python frame on their stack (native threads, before main). */
static const struct bs_frame no_python_frame = { .kind = STACK_FRAME_NO_PYTHON };

struct func_sum *func_sum__new(unsigned flags)
{
	struct func_sum *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->flags = flags;
	fs->funcs = hmap__new(sizeof(struct func_sum_row));
	fs->cut_at = hmap__new(sizeof(__u64));
	if (!fs->funcs || !fs->cut_at) {
		func_sum__free(fs);
		return NULL;
	}
	return fs;
}

void func_sum__free(struct func_sum *fs)
{
	if (!fs)
		return;
	hmap__free(fs->funcs);
	hmap__free(fs->cut_at);
	free(fs);
}

/*
 * What a row is. For people an unnamed native frame is its module's row and a Python frame
 * gone before it was read one row of its own: one row per address says nothing.
 */
static struct hkey func_key(const struct bs_frame *f, unsigned flags)
{
	if (f->func_id && f->kind == BS_FRAME_PYTHON)
		return (struct hkey){ f->func_id |
					      (flags & FUNC_SUM_BY_FUNC ? 0 : (__u64)f->line << 32),
				      (__u64)f->file_id << 32 | f->kind };
	if (f->func_id)
		return (struct hkey){ f->func_id, (__u64)f->file_id << 32 | f->kind };
	/* A marker's line is why the walk stopped: two reasons are two rows. */
	if (f->kind == BS_FRAME_CUT)
		return (struct hkey){ f->line, (__u64)f->file_id << 32 | f->kind };
	if (flags & FUNC_SUM_GROUP)
		return (struct hkey){ 0, (__u64)f->file_id << 32 | f->kind };
	return (struct hkey){ f->addr, (__u64)f->file_id << 32 | f->kind };
}

/* Count N samples in FR's row: as its own (SELF), and in its total once per stack. */
static int count(struct func_sum *fs, const struct bs_frame *fr, int self, __u64 n)
{
	struct func_sum_row *f = hmap__get(fs->funcs, func_key(fr, fs->flags), 1);

	if (!f)
		return -ENOMEM;
	if (!f->frame)
		f->frame = fr;
	if (self)
		f->self += n;
	if (f->last != fs->adds) {
		f->last = fs->adds;
		f->total += n;
	}
	return 0;
}

static int has_python(const struct trace_stack *s)
{
	for (__u32 i = 0; s && i < s->nframes; i++)
		if (s->frames[i].kind == BS_FRAME_PYTHON)
			return 1;
	return 0;
}

/* A marker where the native unwind stopped: not a function, said apart (once per stack). */
static int count_cut(struct func_sum *fs, const struct bs_frame *fr, int *cut, __u64 n)
{
	__u64 *at = hmap__get(fs->cut_at, (struct hkey){ fr->file_id, 0 }, 1);

	if (!at)
		return -ENOMEM;
	if (!(*cut)++) {
		fs->cut += n;
		*at += n;
	}
	return 0;
}

int func_sum__add(struct func_sum *fs, const struct trace_stack *s, int kernel, __u64 n)
{
	int first = fs->flags & FUNC_SUM_PYTHON_FIRST,
	    python = first ? has_python(s) : !!(fs->flags & FUNC_SUM_PYTHON);
	int leaf = !kernel || python || first, cut = 0, err = 0;

	fs->adds++;
	if (kernel && !leaf)
		err = count(fs, &kernel_frame, 1, n);
	for (__u32 i = 0; s && i < s->nframes && !err; i++) {
		const struct bs_frame *fr = &s->frames[i];

		if (python && fr->kind != BS_FRAME_PYTHON)
			continue;
		if (fr->kind == BS_FRAME_CUT && (fs->flags & FUNC_SUM_GROUP)) {
			err = count_cut(fs, fr, &cut, n);
			continue;
		}
		err = count(fs, fr, leaf, n);
		leaf = 0;
	}
	if (!err && python && leaf && !first)
		err = count(fs, &no_python_frame, 1, n);
	return err;
}

struct func_sum_row *func_sum__next(const struct func_sum *fs, size_t *it)
{
	return hmap__next(fs->funcs, it, NULL);
}

size_t func_sum__count(const struct func_sum *fs)
{
	return hmap__count(fs->funcs);
}

const struct func_sum_row *func_sum__find(const struct func_sum *fs, const struct bs_frame *f)
{
	return hmap__get(fs->funcs, func_key(f, fs->flags), 0);
}

__u64 func_sum__cut(const struct func_sum *fs, __u32 *module_id)
{
	__u64 *v, best = 0;
	struct hkey key;
	size_t it = 0;

	*module_id = 0;
	while ((v = hmap__next(fs->cut_at, &it, &key)))
		if (*v > best) {
			best = *v;
			*module_id = (__u32)key.a;
		}
	return fs->cut;
}

const char *func_sum__func(const struct bs_frame *fr, const struct trace_model *m, unsigned flags,
			   char *buf, size_t len)
{
	const char *file = stack_frame__file(fr, m), *b = strrchr(file, '/');

	if (fr->kind == STACK_FRAME_NO_PYTHON)
		return "[no Python frame]";
	if ((flags & FUNC_SUM_GROUP) && fr->kind == BS_FRAME_NATIVE && !fr->func_id) {
		snprintf(buf, len, "[%s]", *file ? (b ? b + 1 : file) : "unknown code");
		return buf;
	}
	if ((flags & FUNC_SUM_GROUP) && fr->kind == BS_FRAME_PYTHON && !fr->func_id)
		return "[python code gone before it was read]";
	return stack_frame__func(fr, m, buf, len);
}
