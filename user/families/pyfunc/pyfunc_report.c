// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc_sum (ours, cProfile's view): per named function of a process (its name, file and
 * line), cProfile's ncalls ("total/primitive" when it recursed), tottime (its time less the
 * named calls directly inside it), cumtime (recursion counted once: the pieces not inside a
 * piece of their own function), both per-call figures, and the pieces' min, max and mean;
 * how many were left by an exception, suspended (a generator's or coroutine's yield or
 * await) or still running when the recording ended. A generator's every run between resumes
 * is a call, as cProfile counts it. Unlike cProfile, "inside" means inside a named call:
 * what the job called that is not named is the caller's own time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pyfunc_calls.h"
#include "table.h"

struct sum_row {
	const struct pyfunc_piece *first; /* its key: pid, function, file, line */
	__u64 calls, primitive, tottime, cumtime, min, max, total;
	__u64 unwound, yielded, open;
};

static void row_add(struct sum_row *r, const struct pyfunc_piece *p)
{
	__u64 self = p->dur > p->child_ns ? p->dur - p->child_ns : 0;

	if (!r->calls++) {
		r->first = p;
		r->min = p->dur;
	}
	r->min = p->dur < r->min ? p->dur : r->min;
	r->max = p->dur > r->max ? p->dur : r->max;
	r->total += p->dur;
	r->tottime += self;
	if (!p->recursive) {
		r->primitive++;
		r->cumtime += p->dur;
	}
	r->unwound += p->end == BS_PYFUNC_END_UNWIND;
	r->yielded += p->end == BS_PYFUNC_END_YIELD;
	r->open += p->end == BS_PYFUNC_END_OPEN;
}

static const struct trace_model *sort_model;

static const char *str(const struct trace_model *m, __u32 id)
{
	const char *s = id ? trace_model__string(m, id) : NULL;

	return s ? s : "";
}

/* cProfile's "cumulative" order, then by name, file and process. */
static int by_cumtime(const void *x, const void *y)
{
	const struct sum_row *a = x, *b = y;
	int c;

	if (a->cumtime != b->cumtime)
		return a->cumtime < b->cumtime ? 1 : -1;
	c = strcmp(str(sort_model, a->first->func_id), str(sort_model, b->first->func_id));
	if (!c)
		c = strcmp(str(sort_model, a->first->file_id), str(sort_model, b->first->file_id));
	if (!c)
		c = (a->first->line > b->first->line) - (a->first->line < b->first->line);
	return c ? c : (a->first->pid > b->first->pid) - (a->first->pid < b->first->pid);
}

enum {
	C_NCALLS,
	C_TOTTIME,
	C_TOT_PERCALL,
	C_CUMTIME,
	C_CUM_PERCALL,
	C_AVG,
	C_MIN,
	C_MAX,
	C_CALLS,
	C_PRIMITIVE,
	C_UNWOUND,
	C_YIELDED,
	C_OPEN,
	C_PID,
	C_FUNC,
	C_FILE,
	C_LINE,
	NCOLS,
};

static void sum__cols(struct table *t, int *c)
{
	c[C_NCALLS] = table__add_col(t, "ncalls", "ncalls", TABLE_STR);
	c[C_TOTTIME] = table__add_col(t, "tottime_ns", "tottime (ns)", TABLE_U64);
	c[C_TOT_PERCALL] = table__add_col(t, "tottime_percall_ns", "percall (ns)", TABLE_DOUBLE);
	c[C_CUMTIME] = table__add_col(t, "cumtime_ns", "cumtime (ns)", TABLE_U64);
	c[C_CUM_PERCALL] = table__add_col(t, "cumtime_percall_ns", "percall (ns)", TABLE_DOUBLE);
	c[C_AVG] = table__add_col(t, "avg_ns", "Avg (ns)", TABLE_DOUBLE);
	c[C_MIN] = table__add_col(t, "min_ns", "Min (ns)", TABLE_U64);
	c[C_MAX] = table__add_col(t, "max_ns", "Max (ns)", TABLE_U64);
	c[C_CALLS] = table__add_col(t, "calls", "Calls", TABLE_U64);
	c[C_PRIMITIVE] = table__add_col(t, "primitive_calls", "Primitive", TABLE_U64);
	c[C_UNWOUND] = table__add_col(t, "exceptions", "Exceptions", TABLE_U64);
	c[C_YIELDED] = table__add_col(t, "yields", "Yields", TABLE_U64);
	c[C_OPEN] = table__add_col(t, "open", "Open", TABLE_U64);
	c[C_PID] = table__add_col(t, "pid", "PID", TABLE_U64);
	c[C_FUNC] = table__add_col(t, "function", "Function", TABLE_STR);
	c[C_FILE] = table__add_col(t, "file", "File", TABLE_STR);
	c[C_LINE] = table__add_col(t, "line", "Line", TABLE_U64);
	/* the counts cProfile's ncalls already says, and the file's path, go first */
	for (int i = C_CALLS; i <= C_PRIMITIVE; i++)
		table__set_flags(t, c[i], TABLE_COL_MINOR);
	table__set_flags(t, c[C_FILE], TABLE_COL_PATH);
}

static void sum__row(struct table *t, const int *c, const struct sum_row *r,
		     const struct trace_model *m)
{
	char ncalls[48];

	if (r->primitive == r->calls)
		snprintf(ncalls, sizeof(ncalls), "%llu", (unsigned long long)r->calls);
	else
		snprintf(ncalls, sizeof(ncalls), "%llu/%llu", (unsigned long long)r->calls,
			 (unsigned long long)r->primitive);
	table__row(t);
	table__set_str(t, c[C_NCALLS], ncalls);
	table__set_u64(t, c[C_TOTTIME], r->tottime);
	table__set_double(t, c[C_TOT_PERCALL], (double)r->tottime / r->calls);
	table__set_u64(t, c[C_CUMTIME], r->cumtime);
	table__set_double(t, c[C_CUM_PERCALL],
			  r->primitive ? (double)r->cumtime / r->primitive : 0.0);
	table__set_double(t, c[C_AVG], (double)r->total / r->calls);
	table__set_u64(t, c[C_MIN], r->min);
	table__set_u64(t, c[C_MAX], r->max);
	table__set_u64(t, c[C_CALLS], r->calls);
	table__set_u64(t, c[C_PRIMITIVE], r->primitive);
	table__set_u64(t, c[C_UNWOUND], r->unwound);
	table__set_u64(t, c[C_YIELDED], r->yielded);
	table__set_u64(t, c[C_OPEN], r->open);
	table__set_u64(t, c[C_PID], r->first->pid);
	table__set_str(t, c[C_FUNC], str(m, r->first->func_id));
	table__set_str(t, c[C_FILE], str(m, r->first->file_id));
	table__set_u64(t, c[C_LINE], r->first->line);
}

/* What the rows' figures leave out, under the table. */
static void sum__notes(struct table *t, const struct sum_row *rows, size_t n)
{
	__u64 open = 0;

	for (size_t i = 0; i < n; i++)
		open += rows[i].open;
	if (open)
		table__add_note(t,
				"%llu calls were still running when the recording ended: their "
				"time runs up to its end.",
				(unsigned long long)open);
}

static int sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct pyfunc_calls *calls = vst;
	struct sum_row *rows = NULL;
	size_t *row = NULL;
	long nrows = pyfunc_calls__rows(calls, &row);
	int c[NCOLS], err = nrows < 0 ? (int)nrows : 0;

	if (!err && !(rows = calloc(nrows + 1, sizeof(*rows))))
		err = -ENOMEM;
	if (err)
		goto out;
	for (size_t i = 0; i < calls->n; i++)
		row_add(&rows[row[i]], &calls->v[i]);
	sort_model = m;
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_cumtime);
	sum__cols(t, c);
	for (long i = 0; i < nrows; i++)
		sum__row(t, c, &rows[i], m);
	sum__notes(t, rows, nrows);
	err = table__err(t);
out:
	free(rows);
	free(row);
	return err;
}

static const struct report pyfunc_sum = {
	.name = "pyfunc_sum",
	.desc = "Named Python functions: cProfile's ncalls, tottime, cumtime (--python-functions)",
	.new = pyfunc_calls__new,
	.add = pyfunc_calls__add,
	.emit = sum__emit,
	.free = pyfunc_calls__free,
};

const struct report *const pyfunc_reports[] = {
	&pyfunc_sum,
	&pyfunc_step_sum,
	NULL,
};
