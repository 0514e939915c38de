// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc_step_sum (ours, Lightning's simple profiler's per-hook means): with steps in the
 * trace (the steps service's, steps.h: torch's, -t torch, else the source --steps names), per
 * named function of a process, its calls and its time per step of that process: the mean over
 * every step (a step without a call counts 0), and the least and most time one step held. A
 * call belongs to the step it began in; its time is cumtime's (recursion counted once). Calls
 * outside every step are counted apart.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "pyfunc_calls.h"
#include "steps.h"
#include "table.h"

struct step_row {
	const struct pyfunc_piece *first; /* its key: pid, function, file, line */
	__u64 outside;			  /* calls in no step */
	double time_per_step, calls_per_step;
	__u64 min, max, steps;
};

struct cell {
	__u64 calls, ns;
};

/* The index of the step of P's process that P began in, or -1. */
static long step_of(const struct steps *steps, const struct pyfunc_piece *p)
{
	size_t n;
	const struct step_span *v = steps__of(steps, p->pid, &n);

	return steps__find(v, n, p->ts);
}

/* Fill R's per-step figures from its cells, over every step of its process. */
static void row_finish(const struct steps *steps, struct hmap *cells, size_t idx,
		       struct step_row *r)
{
	__u64 calls = 0, ns = 0;
	size_t n;

	steps__of(steps, r->first->pid, &n);
	r->min = ~0ull;
	for (size_t i = 0; i < n; i++) {
		struct cell *c = hmap__get(cells, (struct hkey){ idx, i }, 0);
		__u64 v = c ? c->ns : 0;

		r->steps++;
		calls += c ? c->calls : 0;
		ns += v;
		r->min = v < r->min ? v : r->min;
		r->max = v > r->max ? v : r->max;
	}
	if (!r->steps)
		r->min = 0;
	r->calls_per_step = r->steps ? (double)calls / r->steps : 0.0;
	r->time_per_step = r->steps ? (double)ns / r->steps : 0.0;
}

static int by_time(const void *x, const void *y)
{
	const struct step_row *a = x, *b = y;

	if (a->time_per_step != b->time_per_step)
		return a->time_per_step < b->time_per_step ? 1 : -1;
	return (a->first > b->first) - (a->first < b->first); /* by first start */
}

static void step__table(struct table *t, const struct trace_model *m, struct step_row *rows,
			size_t n, const char *named)
{
	enum {
		C_TIME_PER_STEP,
		C_CALLS_PER_STEP,
		C_MIN_STEP,
		C_MAX_STEP,
		C_STEPS,
		C_OUTSIDE_STEPS,
		C_PID,
		C_FUNCTION,
		C_FILE,
		C_LINE,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_TIME_PER_STEP] = { "time_per_step_ns", "Time/Step (ns)", TABLE_DOUBLE },
		[C_CALLS_PER_STEP] = { "calls_per_step", "Calls/Step", TABLE_DOUBLE,
				       .precision = 2 },
		[C_MIN_STEP] = { "min_step_ns", "Min Step (ns)", TABLE_U64 },
		[C_MAX_STEP] = { "max_step_ns", "Max Step (ns)", TABLE_U64 },
		[C_STEPS] = { "steps", "Steps", TABLE_U64 },
		[C_OUTSIDE_STEPS] = { "outside_steps", "Calls Outside", TABLE_U64 },
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_FUNCTION] = { "function", "Function", TABLE_STR },
		[C_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },
		[C_LINE] = { "line", "Line", TABLE_U64 },
	};
	__u64 outside = 0, stepless = 0;

	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		const struct step_row *r = &rows[i];
		const char *func = trace_model__string(m, r->first->func_id);
		const char *file = trace_model__string(m, r->first->file_id);

		if (!r->steps) {
			stepless++;
			continue;
		}
		outside += r->outside;
		table__row(t);
		table__set_double(t, C_TIME_PER_STEP, r->time_per_step);
		table__set_double(t, C_CALLS_PER_STEP, r->calls_per_step);
		table__set_u64(t, C_MIN_STEP, r->min);
		table__set_u64(t, C_MAX_STEP, r->max);
		table__set_u64(t, C_STEPS, r->steps);
		table__set_u64(t, C_OUTSIDE_STEPS, r->outside);
		table__set_u64(t, C_PID, r->first->pid);
		table__set_str(t, C_FUNCTION, func ? func : "");
		table__set_str(t, C_FILE, file ? file : "");
		table__set_u64(t, C_LINE, r->first->line);
	}
	if (n && !table__nrows(t) && named)
		table__add_note(
			t, "No step in the trace: neither torch's (-t torch) nor --steps=%s's.",
			named);
	else if (n && !table__nrows(t))
		table__add_note(t, "No torch step in the trace: record -t torch too (its steps end "
				   "at each optimizer step).");
	if (stepless && table__nrows(t))
		table__add_note(t, "%llu functions of processes without a step are left out.",
				(unsigned long long)stepless);
	if (outside && table__nrows(t))
		table__add_note(t,
				"%llu calls began outside every step (before the first step's "
				"start, after the last one's end): Calls Outside.",
				(unsigned long long)outside);
}

/* Each piece's calls and time into the cell of its function and step (else outside). */
static int step__cells(const struct pyfunc_calls *st, const struct steps *steps, const size_t *row,
		       struct step_row *rows, struct hmap *cells)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct pyfunc_piece *p = &st->v[i];
		long s = step_of(steps, p);
		struct cell *c;

		if (!rows[row[i]].first)
			rows[row[i]].first = p;
		if (s < 0) {
			rows[row[i]].outside++;
			continue;
		}
		c = hmap__get(cells, (struct hkey){ row[i], (__u64)s }, 1);
		if (!c)
			return -ENOMEM;
		c->calls++;
		c->ns += p->recursive ? 0 : p->dur;
	}
	return 0;
}

static int step__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			  struct table *t)
{
	struct pyfunc_calls *st = vst;
	struct hmap *cells = NULL;
	struct step_row *rows = NULL;
	size_t *row = NULL;
	long nrows = pyfunc_calls__rows(st, &row);
	int err = nrows < 0 ? (int)nrows : 0;

	if (!err && (!(rows = calloc(nrows + 1, sizeof(*rows))) ||
		     !(cells = hmap__new(sizeof(struct cell)))))
		err = -ENOMEM;
	if (err)
		goto out;
	err = step__cells(st, ask->steps, row, rows, cells);
	if (err)
		goto out;
	for (long i = 0; i < nrows; i++)
		row_finish(ask->steps, cells, i, &rows[i]);
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_time);
	step__table(t, m, rows, nrows, steps__named(ask->steps));
	err = table__err(t);
out:
	free(rows);
	free(row);
	hmap__free(cells);
	return err;
}

static int step__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return step__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

const struct report pyfunc_step_sum = {
	.name = "pyfunc_step_sum",
	.desc = "Named Python functions per torch step: calls and time per step (-t torch)",
	.new = pyfunc_calls__new,
	.add = pyfunc_calls__add,
	.emit = step__emit,
	.emit_for = step__emit_for,
	.free = pyfunc_calls__free,
};
