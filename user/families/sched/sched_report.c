// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of sched: off-CPU intervals and the per-thread sched_sum report. */
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include "sched.h"
#include "hmap.h"
#include "table.h"

/* Blocked part of an interval; a record claiming more runnable time than its length is bogus. */
static __u64 offcpu_blocked(const struct bs_offcpu *o)
{
	return o->runnable_ns < o->dur ? o->dur - o->runnable_ns : 0;
}

/* What a switch-out's event and row say of it. */
static void offcpu_args(const struct bs_hdr *rec, struct event *ev)
{
	const struct bs_offcpu *o = (const void *)rec;

	ev->dur = o->dur;
	event__arg_u64(ev, "state", o->state);
	event__arg_u64(ev, "blocked_ns", offcpu_blocked(o));
	event__arg_u64(ev, "runnable_ns", o->runnable_ns);
	event__arg_u64(ev, "oncpu_ns", o->oncpu_ns);
	event__arg_u64(ev, "waker_tid", o->waker_tid);
	event__arg_u64(ev, "cpu", rec->cpu);
}

static int decode_offcpu(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_offcpu *o = (const void *)rec;

	/* A thread's last switch-out as it exits: no time off its CPU, an event of nothing; its
	 * run slice is the reports' (sched_sum, the page's lanes). */
	if (o->state == BS_SCHED_DEAD)
		return 0;
	ev->name = o->state ? "blocked" : "preempted";
	offcpu_args(rec, ev);
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=sched */
	return 1;
}

/*
 * A thread's last switch-out as a row of its own kind (ClickHouse's sched_sum counts it as
 * sched_sum__add does: a switch, and the run slice that ended there).
 */
static int row_offcpu_exit(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_offcpu *o = (const void *)rec;

	if (o->state != BS_SCHED_DEAD)
		return 0;
	ev->kind = "offcpu_exit";
	ev->name = "exited";
	offcpu_args(rec, ev);
	return 1;
}

static const struct export_style offcpu_style = {
	.cat = "sched",
	.ph = 'X',
	.track = "off-CPU",
	.desc = "Intervals this thread was off the CPU (sched): 'blocked' = it slept, 'preempted' = "
		"it stayed runnable. runnable_ns = time from wakeup to running again.",
};

/* What the thread's schedstat added as ready to run beyond its wait (sched_records.h). */
static int decode_clock_skew(const struct bs_hdr *rec, const struct trace_model *m,
			     struct event *ev)
{
	const struct bs_clock_skew *s = (const void *)rec;

	(void)m;
	ev->name = "schedstat counts a sleep";
	event__arg_u64(ev, "extra_ns", s->extra_ns);
	event__arg_u64(ev, "kernel_ns", s->kernel_ns);
	event__arg_u64(ev, "cpu", rec->cpu);
	return 1;
}

static const struct export_style clock_skew_style = { .cat = "sched", .ph = 'i' };

const struct rec_decoder sched_decoders[] = {
	{ BS_REC_OFFCPU, sizeof(struct bs_offcpu), "offcpu", decode_offcpu, &offcpu_style,
	  .task_offs = { offsetof(struct bs_offcpu, waker_tid) }, .span = 1,
	  .row = row_offcpu_exit },
	{ BS_REC_CLOCK_SKEW, sizeof(struct bs_clock_skew), "clock_skew", decode_clock_skew,
	  &clock_skew_style },
	{ 0 },
};

/* sched_sum: where each thread's time went, one row per thread. */
struct sched_thread {
	__u64 oncpu, offcpu, blocked, runnable, switches, preemptions;
};

struct sched_sum {
	struct hmap *threads; /* {pid, tid} -> struct sched_thread */
	int err;
};

static void *sched_sum__new(void)
{
	struct sched_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->threads = hmap__new(sizeof(struct sched_thread));
	if (!st->threads) {
		free(st);
		return NULL;
	}
	return st;
}

__u64 sched__oncpu_in(const struct bs_offcpu *o, const struct trace_model *m)
{
	/* The run slice that ended as it went off its CPU, inside the recording only. */
	__u64 out = trace_model__began(m, &o->h), start = trace_model__start(m);

	if (out - o->oncpu_ns >= start || out < o->oncpu_ns)
		return o->oncpu_ns;
	return out > start ? out - start : 0;
}

static void sched_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_offcpu *o = (const void *)rec;
	struct sched_sum *st = vst;
	struct sched_thread *th;

	if (rec->type != BS_REC_OFFCPU)
		return;
	th = hmap__get(st->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!th) {
		st->err = -ENOMEM;
		return;
	}
	th->oncpu += sched__oncpu_in(o, m);
	th->offcpu += o->dur;
	th->blocked += offcpu_blocked(o);
	th->runnable += o->runnable_ns < o->dur ? o->runnable_ns : o->dur;
	th->switches++;
	th->preemptions += o->state == 0;
}

struct sched_row {
	__u32 pid, tid;
	const struct sched_thread *th;
};

static int sched_row_cmp(const void *a, const void *b)
{
	const struct sched_row *x = a, *y = b;

	if (x->th->offcpu != y->th->offcpu)
		return x->th->offcpu < y->th->offcpu ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int sched_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_TID,
		C_ONCPU,
		C_OFFCPU,
		C_BLOCKED,
		C_RUNNABLE,
		C_SWITCHES,
		C_PREEMPTIONS,
		C_PROCESS,
		C_THREAD_NAME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_TID] = { "tid", "TID", TABLE_U64 },
		[C_ONCPU] = { "oncpu_ns", "On-CPU (ns)", TABLE_U64 },
		[C_OFFCPU] = { "offcpu_ns", "Off-CPU (ns)", TABLE_U64 },
		[C_BLOCKED] = { "blocked_ns", "Blocked (ns)", TABLE_U64 },
		[C_RUNNABLE] = { "runnable_ns", "Runnable (ns)", TABLE_U64 },
		[C_SWITCHES] = { "switches", "Switches", TABLE_U64, TABLE_COL_MINOR },
		[C_PREEMPTIONS] = { "preemptions", "Preemptions", TABLE_U64, TABLE_COL_MINOR },
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_THREAD_NAME] = { "thread_name", "Thread", TABLE_STR },
	};
	struct sched_sum *st = vst;
	const struct sched_thread *th;
	struct sched_row *rows;
	size_t it = 0, n = 0, i;
	struct hkey key;
	int err;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->threads) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((th = hmap__next(st->threads, &it, &key))) {
		rows[n].pid = (__u32)key.a;
		rows[n].tid = (__u32)key.b;
		rows[n].th = th;
		n++;
	}
	qsort(rows, n, sizeof(*rows), sched_row_cmp);

	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < n; i++) {
		th = rows[i].th;
		table__row(t);
		table__set_u64(t, C_PID, rows[i].pid);
		table__set_u64(t, C_TID, rows[i].tid);
		table__set_u64(t, C_ONCPU, th->oncpu);
		table__set_u64(t, C_OFFCPU, th->offcpu);
		table__set_u64(t, C_BLOCKED, th->blocked);
		table__set_u64(t, C_RUNNABLE, th->runnable);
		table__set_u64(t, C_SWITCHES, th->switches);
		table__set_u64(t, C_PREEMPTIONS, th->preemptions);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, rows[i].pid));
		table__set_str(t, C_THREAD_NAME, trace_model__thread_name(m, rows[i].tid));
	}
	err = table__err(t);
	free(rows);
	return err;
}

static void sched_sum__free(void *vst)
{
	struct sched_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->threads);
	free(st);
}

static const struct report sched_sum = {
	.name = "sched_sum",
	.desc = "Thread Scheduling Summary",
	.new = sched_sum__new,
	.add = sched_sum__add,
	.emit = sched_sum__emit,
	.free = sched_sum__free,
};

const struct report *const sched_reports[] = { &sched_sum, &offcpu_stacks, NULL };
