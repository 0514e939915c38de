// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* top's function view, its counting side (top_funcs.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "func_sum.h"
#include "hmap.h"
#include "human.h"
#include "stack_format.h"
#include "top_funcs.h"
#include "trace_model.h"

/* Rows a frame gets per column: the busiest by each of the four, so any sort has its top. */
#define FUNC_ROWS 100

/* py-spy top's view: Python frames when the stack has some, unnamed native code per module. */
static const unsigned sum_flags[2] = {
	[TOP_FUNCS_BY_LINE] = FUNC_SUM_PYTHON_FIRST | FUNC_SUM_GROUP,
	[TOP_FUNCS_BY_FUNC] = FUNC_SUM_PYTHON_FIRST | FUNC_SUM_GROUP | FUNC_SUM_BY_FUNC,
};

struct top_funcs {
	struct hmap *stacks;	 /* (stack id, kernel) -> __u64 samples of the interval */
	__u64 samples, nostack;	 /* the interval's */
	__u64 samples_all;	 /* since the start (or r) */
	struct func_sum *all[2]; /* since the start (or r), TOP_FUNCS_BY_* */
	__u64 period_ns, period_fixed;
	int sampled;
};

struct top_funcs *top_funcs__new(void)
{
	struct top_funcs *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->stacks = hmap__new(sizeof(__u64));
	if (!f->stacks || top_funcs__reset(f)) {
		top_funcs__free(f);
		return NULL;
	}
	return f;
}

void top_funcs__free(struct top_funcs *f)
{
	if (!f)
		return;
	hmap__free(f->stacks);
	for (int k = 0; k < 2; k++)
		func_sum__free(f->all[k]);
	free(f);
}

int top_funcs__reset(struct top_funcs *f)
{
	struct func_sum *fresh[2] = { func_sum__new(sum_flags[0]), func_sum__new(sum_flags[1]) };

	if (!fresh[0] || !fresh[1]) { /* the sums go on as they were */
		func_sum__free(fresh[0]);
		func_sum__free(fresh[1]);
		return -ENOMEM;
	}
	for (int k = 0; k < 2; k++) {
		func_sum__free(f->all[k]);
		f->all[k] = fresh[k];
	}
	f->samples_all = 0;
	return 0;
}

void top_funcs__set_period(struct top_funcs *f, __u64 period_ns)
{
	f->period_ns = f->period_fixed = period_ns;
}

int top_funcs__sampled(const struct top_funcs *f)
{
	return f->sampled;
}

int top_funcs__sample(struct top_funcs *f, __u32 stack_id, int kernel, __u64 period_ns)
{
	__u64 *n = hmap__get(f->stacks, (struct hkey){ stack_id, !!kernel }, 1);

	if (!n)
		return -ENOMEM;
	(*n)++;
	f->samples++;
	f->nostack += !stack_id;
	f->sampled = 1;
	if (!f->period_fixed)
		f->period_ns = period_ns;
	return 0;
}

/* A row as the selection sees it: its sums since the start, and the interval's. */
struct cand {
	const struct func_sum_row *all;
	__u64 own, total;
	int keep;
};

/* The four columns' values: %Own, %Total (the interval's), OwnTime, TotalTime (since r). */
static __u64 cand_val(const struct cand *c, int key)
{
	return key == 0 ? c->own : key == 1 ? c->total : key == 2 ? c->all->self : c->all->total;
}

static int by_key(const void *a, const void *b, void *arg)
{
	__u64 x = cand_val(a, *(int *)arg), y = cand_val(b, *(int *)arg);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* "inner_a (train.py:46)": the function, its file (as py-spy names it), the line (by line). */
static void row_text(const struct bs_frame *fr, const struct trace_model *m, int k, char *out)
{
	/* Python's as py-spy names it: two packages' __init__.py told apart */
	const char *file = fr->kind == BS_FRAME_PYTHON
				   ? stack_file__module(stack_frame__file(fr, m))
				   : human__base(stack_frame__file(fr, m));
	char buf[TOP_FUNC_TEXT], line[16] = "";
	const char *func = func_sum__func(fr, m, sum_flags[k], buf, sizeof(buf));
	int n;

	if (k == TOP_FUNCS_BY_LINE && fr->kind == BS_FRAME_PYTHON && fr->line)
		snprintf(line, sizeof(line), ":%u", fr->line);
	n = snprintf(out, TOP_FUNC_TEXT, "%s", func);
	if (*file && n < TOP_FUNC_TEXT && func[0] != '[') /* "[libfoo.so]" names its file */
		snprintf(out + n, TOP_FUNC_TEXT - n, " (%s%s)", file, line);
	/* A name is the traced program's: the terminal must not obey it. */
	for (char *p = out; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

/* OUT gets the busiest of the rows of ALL (the interval's sums: NOW), with their names. */
static int select_rows(const struct func_sum *all, const struct func_sum *now,
		       const struct trace_model *m, int k, struct top_funcs_frame *out)
{
	size_t n = func_sum__count(all), i = 0, it = 0;
	struct cand *c = calloc(n + 1, sizeof(*c));
	const struct func_sum_row *r;

	out->n = 0;
	if (!c)
		return -ENOMEM;
	while ((r = func_sum__next(all, &it))) {
		const struct func_sum_row *x = func_sum__find(now, r->frame);

		c[i++] = (struct cand){ r, x ? x->self : 0, x ? x->total : 0, 0 };
	}
	for (int key = 0; key < 4; key++) {
		qsort_r(c, n, sizeof(*c), by_key, &key);
		for (i = 0; i < n && i < FUNC_ROWS && cand_val(&c[i], key); i++)
			c[i].keep = 1;
	}
	for (i = 0; i < n; i++) {
		struct top_func *v;

		if (!c[i].keep)
			continue;
		if (array__grow((void **)&out->v, out->n, &out->cap, sizeof(*out->v))) {
			free(c);
			return -ENOMEM;
		}
		v = &out->v[out->n++];
		*v = (struct top_func){ c[i].own, c[i].total, c[i].all->self, c[i].all->total };
		row_text(c[i].all->frame, m, k, v->text);
	}
	free(c);
	return 0;
}

int top_funcs__cut(struct top_funcs *f, const struct trace_model *m, int want,
		   struct top_funcs_frame out[2])
{
	struct func_sum *now[2] = { func_sum__new(sum_flags[0]), func_sum__new(sum_flags[1]) };
	struct hmap *fresh = hmap__new(sizeof(__u64));
	int err = now[0] && now[1] && fresh ? 0 : -ENOMEM;
	struct hkey key;
	size_t it = 0;
	__u64 *cnt;

	while (!err && (cnt = hmap__next(f->stacks, &it, &key))) {
		const struct trace_stack *s = key.a ? trace_model__stack(m, (__u32)key.a) : NULL;

		for (int k = 0; k < 2 && !err; k++)
			err = func_sum__add(now[k], s, (int)key.b, *cnt)
				      ?: func_sum__add(f->all[k], s, (int)key.b, *cnt);
	}
	f->samples_all += f->samples;
	for (int k = 0; k < 2; k++) {
		out[k].n = 0;
		out[k].samples = f->samples;
		out[k].samples_all = f->samples_all;
		out[k].nostack = f->nostack;
		out[k].period_ns = f->period_ns;
		if (want && !err)
			err = select_rows(f->all[k], now[k], m, k, &out[k]);
	}
	func_sum__free(now[0]);
	func_sum__free(now[1]);
	if (fresh) { /* the next interval counts from nothing */
		hmap__free(f->stacks);
		f->stacks = fresh;
	} else {
		for (it = 0; (cnt = hmap__next(f->stacks, &it, NULL));)
			*cnt = 0;
	}
	f->samples = f->nostack = 0;
	return err;
}

void top_funcs_frame__free(struct top_funcs_frame *fr)
{
	free(fr->v);
	memset(fr, 0, sizeof(*fr));
}
