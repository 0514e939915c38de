// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * torch_step_sum (ours): one row per training step the trace holds (the steps service's:
 * steps.h; torch's TORCH_STEP records, torch_steps.c, where a process has them, else the
 * source --steps names), in the trace's order, with its wall time, how busy the GPU was inside
 * it (the union of the process's GPU operations, clipped to the step), the ops that began in
 * it and the three op names with the most self CPU time in it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_decode.h"
#include "steps.h"
#include "table.h"
#include "tgroups.h"
#include "torch.h"
#include "torch_ops.h"
#include "array.h"

#define TOP_OPS 3

struct span {
	__u32 pid;
	__u64 ts, dur;
};

struct step_report {
	struct torch_ops *t;
	struct span *gpu; /* every GPU operation, linked or not */
	size_t ngpu, cap_gpu;
	__u64 gpu_max_dur;
	int err;
};

static void *step_report__new(void)
{
	struct step_report *st = calloc(1, sizeof(*st));

	if (st && !(st->t = torch_ops__new(0))) {
		free(st);
		return NULL;
	}
	return st;
}

static void step_report__free(void *vst)
{
	struct step_report *st = vst;

	if (!st)
		return;
	torch_ops__free(st->t);
	free(st->gpu);
	free(st);
}

/* E (SIZE bytes) appended to *V of *N: 0 or -ENOMEM. */
static int push(void **v, size_t *n, size_t *cap, size_t size, const void *e)
{
	if (array__grow(v, *n, cap, size))
		return -ENOMEM;
	memcpy((char *)*v + *n * size, e, size);
	(*n)++;
	return 0;
}

static void step_report__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct step_report *st = vst;
	struct gpu_op op;

	if (st->err)
		return;
	if (gpu_op__read(rec, &op)) {
		struct span s = { op.pid, op.ts, op.dur };

		st->gpu_max_dur = op.dur > st->gpu_max_dur ? op.dur : st->gpu_max_dur;
		st->err = push((void **)&st->gpu, &st->ngpu, &st->cap_gpu, sizeof(*st->gpu), &s);
		if (st->err)
			return;
	}
	st->err = torch_ops__add(st->t, rec, m);
}

static int span_cmp(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The first of the N spans of (PID, >= TS) in V sorted by span_cmp. */
static size_t lower_bound(const struct span *v, size_t n, __u32 pid, __u64 ts)
{
	struct span key = { pid, ts, 0 };
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (span_cmp(&v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How long some GPU operation of PID ran inside [START, END). */
static __u64 gpu_busy(const struct step_report *st, __u32 pid, __u64 start, __u64 end)
{
	__u64 from = start > st->gpu_max_dur ? start - st->gpu_max_dur : 0, busy = 0, upto = start;

	for (size_t i = lower_bound(st->gpu, st->ngpu, pid, from);
	     i < st->ngpu && st->gpu[i].pid == pid && st->gpu[i].ts < end; i++) {
		__u64 s = st->gpu[i].ts > upto ? st->gpu[i].ts : upto;
		__u64 e =
			st->gpu[i].ts + st->gpu[i].dur < end ? st->gpu[i].ts + st->gpu[i].dur : end;

		if (e > s) { /* sorted by start: what is past UPTO is new */
			busy += e - s;
			upto = e;
		}
	}
	return busy;
}

/* "aten::mm 12.345 ms, aten::add 1.200 ms" : the names with the most self time in G. */
static void top_ops(struct tgroups *g, char *buf, size_t len)
{
	size_t n, used = 0;
	struct tgroup **rows = tgroups__sorted(g, 0, &n);

	buf[0] = 0;
	for (size_t i = 0; rows && i < n && i < TOP_OPS && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s %.3f ms", i ? ", " : "",
				 rows[i]->name, rows[i]->st[0].total / 1e6);
	free(rows);
}

/*
 * Ops of the step's process that began in it (BY_START: every op as {pid, start, index},
 * sorted): their count, and their self time by name.
 */
static int step_ops(const struct torch_ops *t, const struct span *by_start,
		    const struct step_span *s, __u64 *count, char *top, size_t len)
{
	struct tgroups *g = tgroups__new();
	struct tgroup *row;

	if (!g)
		return -ENOMEM;
	*count = 0;
	for (size_t i = lower_bound(by_start, t->nops, s->pid, s->ts);
	     i < t->nops && by_start[i].pid == s->pid && by_start[i].ts < s->end; i++) {
		const struct torch_op_row *o = &t->ops[by_start[i].dur];

		(*count)++;
		row = tgroups__get(g, o->name, NULL, 0);
		if (!row || tgroup__add(row, 0, o->self_ns)) {
			tgroups__free(g);
			return -ENOMEM;
		}
	}
	top_ops(g, top, len);
	tgroups__free(g);
	return 0;
}

static int step_report__emit_for(void *vst, const struct trace_model *m,
				 const struct report_ask *ask, struct table *t)
{
	enum {
		C_STEP,
		C_PID,
		C_START,
		C_WALL,
		C_GPU_BUSY,
		C_GPU_BUSY_PCT,
		C_OPS,
		C_TOP_OPS,
		C_NAME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_STEP] = { "step", "Step", TABLE_U64 },
		[C_PID] = { "pid", "PID", TABLE_U64 },
		/* From the recording's start, as a timeline shows it (a step before it: 0). */
		[C_START] = { "start_ns", "Start (ns)", TABLE_U64 },
		[C_WALL] = { "wall_ns", "Wall (ns)", TABLE_U64 },
		[C_GPU_BUSY] = { "gpu_busy_ns", "GPU Busy (ns)", TABLE_U64, TABLE_COL_IF_ANY },
		[C_GPU_BUSY_PCT] = { "gpu_busy_pct", "GPU Busy (%)", TABLE_DOUBLE,
				     TABLE_COL_IF_ANY },
		[C_OPS] = { "ops", "Ops", TABLE_U64 },
		[C_TOP_OPS] = { "top_ops", "Top Ops (self CPU)", TABLE_STR },
		[C_NAME] = { "name", "Step Scope", TABLE_STR },
	};
	struct step_report *st = vst;
	const struct step_span *const *steps;
	struct span *by_start;
	__u64 start = trace_model__start(m);
	size_t nsteps;
	int err;
	char top[512];

	if (st->err)
		return st->err;
	err = torch_ops__join(st->t);
	if (err)
		return err;
	by_start = malloc((st->t->nops + 1) * sizeof(*by_start));
	if (!by_start)
		return -ENOMEM;
	for (size_t i = 0; i < st->t->nops; i++)
		by_start[i] = (struct span){ st->t->ops[i].pid, st->t->ops[i].ts, i };
	if (st->t->nops)
		qsort(by_start, st->t->nops, sizeof(*by_start), span_cmp);
	if (st->ngpu)
		qsort(st->gpu, st->ngpu, sizeof(*st->gpu), span_cmp);
	table__add_cols(t, cols, NCOLS);
	steps = steps__all(ask->steps, &nsteps);
	for (size_t i = 0; i < nsteps && !err; i++) {
		const struct step_span *s = steps[i];
		__u64 dur = s->end - s->ts, busy = gpu_busy(st, s->pid, s->ts, s->end), ops = 0;
		const char *name = s->name_id ? trace_model__string(m, s->name_id) : NULL;

		err = step_ops(st->t, by_start, s, &ops, top, sizeof(top));
		table__row(t);
		table__set_u64(t, C_STEP, s->step);
		table__set_u64(t, C_PID, s->pid);
		table__set_u64(t, C_START, s->ts > start ? s->ts - start : 0);
		table__set_u64(t, C_WALL, dur);
		table__set_u64(t, C_GPU_BUSY, busy);
		table__set_double(t, C_GPU_BUSY_PCT, dur ? 100.0 * busy / dur : 0.0);
		table__set_u64(t, C_OPS, ops);
		table__set_str(t, C_TOP_OPS, top);
		/* Another source's step without a name (cudaProfilerApi's ranges): its kind. */
		table__set_str(t, C_NAME,
			       name				 ? name
			       : (s->src->flags & STEPS_DEFAULT) ? ""
								 : s->src->kind);
	}
	free(by_start);
	return err ? err : table__err(t);
}

static int step_report__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return step_report__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

const struct report torch_step_sum = {
	.name = "torch_step_sum",
	.desc = "PyTorch training steps: wall time, GPU busy, top ops",
	.new = step_report__new,
	.add = step_report__add,
	.emit = step_report__emit,
	.emit_for = step_report__emit_for,
	.free = step_report__free,
};
