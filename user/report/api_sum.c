// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nsys's API summary over a uprobe family's calls: api_sum.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_sum.h"
#include "hmap.h"
#include "stats_math.h"
#include "table.h"
#include "time_sum.h"

struct api_stat {
	struct samples samples;
	__u64 count, total, min, max;
};

struct api_sum {
	const struct ucall_table *table;
	const struct api_sum_extra *extra; /* NULL: the timing columns alone */
	struct hmap *by_fn;		   /* {fn, 0} -> struct api_stat, then the extra's state */
	int err;
};

/* The extra's state of a function, after its timing (aligned as a malloc'd block). */
static void *extra_of(struct api_stat *a)
{
	return (char *)a + ((sizeof(*a) + 15) & ~(size_t)15);
}

void *api_sum__new_extra(const struct ucall_table *t, const struct api_sum_extra *extra)
{
	struct api_sum *st = calloc(1, sizeof(*st));
	size_t size = extra ? ((sizeof(struct api_stat) + 15) & ~(size_t)15) + extra->size
			    : sizeof(struct api_stat);

	if (!st)
		return NULL;
	st->table = t;
	st->extra = extra;
	st->by_fn = hmap__new(size);
	if (!st->by_fn) {
		free(st);
		return NULL;
	}
	return st;
}

void *api_sum__new(const struct ucall_table *t)
{
	return api_sum__new_extra(t, NULL);
}

void api_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct api_sum *st = vst;
	struct api_stat *a;

	/* A call a traced call made (a driver call the runtime made) is its caller's time. */
	if (rec->type != st->table->rec_type || rec->size < sizeof(*u) || u->depth)
		return;
	a = hmap__get(st->by_fn, (struct hkey){ u->fn, 0 }, 1);
	if (!a || samples__add(&a->samples, (double)u->dur, 1)) {
		st->err = -ENOMEM;
		return;
	}
	if (!a->count || u->dur < a->min)
		a->min = u->dur;
	if (!a->count || u->dur > a->max)
		a->max = u->dur;
	a->count++;
	a->total += u->dur;
	if (st->extra)
		st->extra->add(extra_of(a), rec);
}

struct api_row {
	char name[64]; /* a copy: rows move while sorting */
	struct api_stat *a;
	__u32 fn;
};

static int api_row_cmp(const void *x, const void *y)
{
	const struct api_row *a = x, *b = y;

	if (a->a->total != b->a->total)
		return a->a->total < b->a->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

int api_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct api_sum *st = vst;
	const struct api_sum_extra *x = st->extra;
	struct api_row *rows;
	struct api_stat *a;
	size_t it = 0, n = 0, i;
	long double grand = 0;
	static const struct table_col time_cols[TIME_SUM_NCOLS] = { TIME_SUM_COLS("Num Calls") };
	static const struct table_col name_col = { "name", "Name", TABLE_STR };
	int nextra = x ? x->ncols : 0, c_name = TIME_SUM_NCOLS + nextra;
	struct hkey key;
	__u32 *fns;
	int err;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->by_fn) + 1, sizeof(*rows));
	fns = calloc(hmap__count(st->by_fn) + 1, sizeof(*fns));
	if (!rows || !fns) {
		free(rows);
		free(fns);
		return -ENOMEM;
	}
	while ((a = hmap__next(st->by_fn, &it, &key))) {
		const struct ucall_api *api = ucall_table__api(st->table, (__u32)key.a);

		if (api)
			snprintf(rows[n].name, sizeof(rows[n].name), "%s", ucall_api__shown(api));
		else
			snprintf(rows[n].name, sizeof(rows[n].name), "%s_fn_%u", st->table->family,
				 (__u32)key.a);
		rows[n].fn = (__u32)key.a;
		rows[n++].a = a;
		grand += a->total;
	}
	qsort(rows, n, sizeof(*rows), api_row_cmp);

	table__add_cols(t, time_cols, TIME_SUM_NCOLS);
	for (int k = 0; k < nextra; k++)
		table__add_col(t, &x->cols[k]);
	table__add_col(t, &name_col);
	for (i = 0; i < n; i++) {
		a = rows[i].a;
		fns[i] = rows[i].fn;
		table__row(t);
		time_sum__set(t, a->count, a->total, a->min, a->max, &a->samples, grand);
		if (nextra)
			x->set(t, TIME_SUM_NCOLS, extra_of(a));
		table__set_str(t, c_name, rows[i].name);
	}
	if (x && x->note)
		x->note(t, fns, n);
	err = table__err(t);
	free(rows);
	free(fns);
	return err;
}

void api_sum__free(void *vst)
{
	struct api_sum *st = vst;
	struct api_stat *a;
	size_t it = 0;

	if (!st)
		return;
	while ((a = hmap__next(st->by_fn, &it, NULL)))
		samples__free(&a->samples);
	hmap__free(st->by_fn);
	free(st);
}
