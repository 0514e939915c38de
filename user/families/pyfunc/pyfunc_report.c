// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc_sum (ours, cProfile's view): per named function of a process (its name, file and
 * line), cProfile's ncalls ("total/primitive" when it recursed), tottime (its time less the
 * named calls directly inside it), cumtime (recursion counted once: the pieces not inside a
 * piece of their own function), both per-call figures, and the pieces' min, max and mean;
 * how many were left by an exception, suspended (a generator's or coroutine's yield or
 * await) or still running when the recording ended, and how many began before it (already
 * running when tracing began: timed from then). A generator's every run between resumes
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
	__u64 unwound, yielded, open, before;
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
	r->before += !!(p->flags & BS_PYFUNC_BEGAN_BEFORE);
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
	C_BEFORE,
	C_PID,
	C_FUNC,
	C_FILE,
	C_LINE,
	NCOLS,
};

static const struct table_col sum_cols[NCOLS] = {
	[C_NCALLS] = { "ncalls", "ncalls", TABLE_STR },
	[C_TOTTIME] = { "tottime_ns", "tottime (ns)", TABLE_U64 },
	[C_TOT_PERCALL] = { "tottime_percall_ns", "percall (ns)", TABLE_DOUBLE },
	[C_CUMTIME] = { "cumtime_ns", "cumtime (ns)", TABLE_U64 },
	[C_CUM_PERCALL] = { "cumtime_percall_ns", "percall (ns)", TABLE_DOUBLE },
	[C_AVG] = { "avg_ns", "Avg (ns)", TABLE_DOUBLE },
	[C_MIN] = { "min_ns", "Min (ns)", TABLE_U64 },
	[C_MAX] = { "max_ns", "Max (ns)", TABLE_U64 },
	/* the counts cProfile's ncalls already says go first where the width is short */
	[C_CALLS] = { "calls", "Calls", TABLE_U64, TABLE_COL_MINOR },
	[C_PRIMITIVE] = { "primitive_calls", "Primitive", TABLE_U64, TABLE_COL_MINOR },
	[C_UNWOUND] = { "exceptions", "Exceptions", TABLE_U64 },
	[C_YIELDED] = { "yields", "Yields", TABLE_U64 },
	[C_OPEN] = { "open", "Open", TABLE_U64 },
	[C_BEFORE] = { "began_before", "Began Before", TABLE_U64 },
	[C_PID] = { "pid", "PID", TABLE_U64 },
	[C_FUNC] = { "function", "Function", TABLE_STR },
	[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
	[C_LINE] = { "line", "Line", TABLE_U64 },
};

static void sum__row(struct table *t, const struct sum_row *r, const struct trace_model *m)
{
	char ncalls[48];

	if (r->primitive == r->calls)
		snprintf(ncalls, sizeof(ncalls), "%llu", (unsigned long long)r->calls);
	else
		snprintf(ncalls, sizeof(ncalls), "%llu/%llu", (unsigned long long)r->calls,
			 (unsigned long long)r->primitive);
	table__row(t);
	table__set_str(t, C_NCALLS, ncalls);
	table__set_u64(t, C_TOTTIME, r->tottime);
	table__set_double(t, C_TOT_PERCALL, (double)r->tottime / r->calls);
	table__set_u64(t, C_CUMTIME, r->cumtime);
	table__set_double(t, C_CUM_PERCALL, r->primitive ? (double)r->cumtime / r->primitive : 0.0);
	table__set_double(t, C_AVG, (double)r->total / r->calls);
	table__set_u64(t, C_MIN, r->min);
	table__set_u64(t, C_MAX, r->max);
	table__set_u64(t, C_CALLS, r->calls);
	table__set_u64(t, C_PRIMITIVE, r->primitive);
	table__set_u64(t, C_UNWOUND, r->unwound);
	table__set_u64(t, C_YIELDED, r->yielded);
	table__set_u64(t, C_OPEN, r->open);
	table__set_u64(t, C_BEFORE, r->before);
	table__set_u64(t, C_PID, r->first->pid);
	table__set_str(t, C_FUNC, str(m, r->first->func_id));
	table__set_str(t, C_FILE, str(m, r->first->file_id));
	table__set_u64(t, C_LINE, r->first->line);
}

/* What the rows' figures leave out, under the table. */
static void sum__notes(struct table *t, const struct sum_row *rows, size_t n)
{
	__u64 open = 0, before = 0;

	for (size_t i = 0; i < n; i++) {
		open += rows[i].open;
		before += rows[i].before;
	}
	if (before)
		table__add_note(t,
				"%llu calls were already running when the recording began (Began "
				"Before): their time runs from its start, not from the call.",
				(unsigned long long)before);
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
	int err = nrows < 0 ? (int)nrows : 0;

	if (!err && !(rows = calloc(nrows + 1, sizeof(*rows))))
		err = -ENOMEM;
	if (err)
		goto out;
	for (size_t i = 0; i < calls->n; i++)
		row_add(&rows[row[i]], &calls->v[i]);
	sort_model = m;
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_cumtime);
	table__add_cols(t, sum_cols, NCOLS);
	for (long i = 0; i < nrows; i++)
		sum__row(t, &rows[i], m);
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
	&pyfunc_not_found,
	NULL,
};
