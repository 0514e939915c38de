// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What was open at a recording's edges: see proc_edges.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "hmap.h"
#include "human.h"
#include "proc.h"
#include "proc_edges.h"
#include "stack_call.h"
#include "stack_format.h"
#include "table.h"
#include "thread_name.h"
#include "thread_state.h"
#include "trace_snaps.h"

struct proc_edges {
	struct hmap *calls; /* {pid, tid} -> __u64: API calls completed at depth 0 */
	__u64 open_calls;   /* calls in flight (BS_UCALL_OPEN) the file holds */
	int loaded;	    /* from a server's answer (proc_edges__load) */
};

struct proc_edges *proc_edges__new(void)
{
	struct proc_edges *e = calloc(1, sizeof(*e));

	if (e && !(e->calls = hmap__new(sizeof(__u64)))) {
		free(e);
		e = NULL;
	}
	return e;
}

void proc_edges__free(struct proc_edges *e)
{
	if (!e)
		return;
	hmap__free(e->calls);
	free(e);
}

/* REC is a call record of a uprobe-API family (cuda, nccl, cublas...). */
static int api_call(const struct bs_hdr *rec)
{
	int f;

	return rec->size >= sizeof(struct bs_ucall) && family__decoder_at(rec->type, &f) &&
	       families[f]->api && families[f]->api->rec_type == rec->type;
}

void proc_edges__add(struct proc_edges *e, const struct bs_hdr *rec, const struct trace_model *m)
{
	__u64 *n;

	if (!e || !api_call(rec))
		return;
	/* Depth 0 and returned (an in-flight one's depth has BS_UCALL_OPEN). */
	if (((const struct bs_ucall *)rec)->depth & BS_UCALL_OPEN)
		e->open_calls++;
	if (((const struct bs_ucall *)rec)->depth)
		return;
	n = hmap__get(e->calls, (struct hkey){ rec->pid, rec->tid }, 1);
	if (n)
		(*n)++;
}

int proc_edges__load(struct proc_edges *e, const struct table *t)
{
	int cp = table__col(t, "pid"), ct = table__col(t, "tid"), cc = table__col(t, "calls"),
	    co = table__col(t, "open");
	__u64 *n;

	e->loaded = 1;
	for (int r = 0; r < table__nrows(t); r++) {
		e->open_calls += table__get_u64(t, r, co);
		if (!table__get_u64(t, r, cc))
			continue;
		n = hmap__get(e->calls,
			      (struct hkey){ table__get_u64(t, r, cp), table__get_u64(t, r, ct) },
			      1);
		if (!n)
			return -ENOMEM;
		*n += table__get_u64(t, r, cc);
	}
	return 0;
}

int proc_edges__loaded(const struct proc_edges *e)
{
	return e && e->loaded;
}

__u64 proc_edges__open_calls(const struct proc_edges *e)
{
	return e ? e->open_calls : 0;
}

int proc_edges__window(const struct trace_model *m, __u64 *start, __u64 *end)
{
	const struct trace_snaps *s = trace_model__snaps(m);

	*start = trace_snaps__edge_ts(s, BS_SNAP_AT_START);
	*end = trace_snaps__edge_ts(s, BS_SNAP_AT_END);
	return *start && *end > *start;
}

int proc_edges__last(const struct trace_model *m)
{
	const struct trace_snaps *s = trace_model__snaps(m);

	if (trace_snaps__edge_ts(s, BS_SNAP_AT_END))
		return BS_SNAP_AT_END;
	return trace_snaps__taken(s) ? 0 : -1;
}

static const struct trace_stack *stack_of(const struct trace_model *m,
					  const struct bs_thread_snap *t)
{
	return t && t->stack_id ? trace_model__stack(m, t->stack_id) : NULL;
}

/* 1 when the two snapshots put the thread in the same call at the same line. */
static int same_place(const struct trace_model *m, const struct bs_thread_snap *a,
		      const struct bs_thread_snap *b)
{
	const struct trace_stack *x = stack_of(m, a), *y = stack_of(m, b);
	char ca[96], cb[96], wa[320], wb[320];
	const char *call_a, *call_b;

	if (!x || !y)
		return 0;
	call_a = stack_call__in(x, m, ca, sizeof(ca));
	call_b = stack_call__in(y, m, cb, sizeof(cb));
	if (!call_a || !call_b || strcmp(call_a, call_b))
		return 0;
	return !strcmp(stack_call__where(x, m, wa, sizeof(wa)),
		       stack_call__where(y, m, wb, sizeof(wb)));
}

int proc_edges__thread(struct proc_edges *e, const struct trace_model *m, __u32 pid, __u32 tid,
		       struct edge_thread *out)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const __u64 *n = e ? hmap__get(e->calls, (struct hkey){ pid, tid }, 0) : NULL;
	const struct bs_thread_snap *a, *b;
	__u64 read_late;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->tid = tid;
	out->start = a = trace_snaps__thread_at(s, tid, BS_SNAP_AT_START);
	out->end = b = trace_snaps__thread_at(s, tid, proc_edges__last(m));
	out->calls = n ? *n : 0;
	if (!b)
		return 0;
	if (!a || a->h.pid != pid || b->h.pid != pid)
		return 1;
	out->blocked = trace_snaps__blocked(a, b);
	/* Before the start, not before the start's read (which may come some ms later). */
	read_late = a->h.ts > trace_model__start(m) ? a->h.ts - trace_model__start(m) : 0;
	out->since_ns = out->blocked && a->off_cpu_ns > read_late ? a->off_cpu_ns - read_late : 0;
	out->stuck = !out->calls && (out->blocked || same_place(m, a, b));
	return 1;
}

/* The report: a row per thread read at the end. */

static void *edges_new(void)
{
	return proc_edges__new();
}

static void edges_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	proc_edges__add(st, rec, m);
}

static void edges_free(void *st)
{
	proc_edges__free(st);
}

static const char *state_of(const struct bs_thread_snap *t, char *buf, size_t len)
{
	return t ? thread_state__text(t->state, t->syscall, t->flags, buf, len) : "";
}

static int edges_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_PROCESS,
		C_RANK,
		C_TID,
		C_THREAD,
		C_AT_START,
		C_AT_END,
		C_SINCE,
		C_CPU,
		C_CALLS,
		C_STILL,
		C_CALL,
		C_WHERE,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_TID] = { "tid", "TID", TABLE_U64 },
		[C_THREAD] = { "thread", "Thread", TABLE_STR },
		[C_AT_START] = { "at_start", "At Start", TABLE_STR },
		[C_AT_END] = { "at_end", "At End", TABLE_STR },
		[C_SINCE] = { "blocked_before_ns", "Blocked Before Start", TABLE_U64 },
		[C_CPU] = { "cpu_ns", "CPU Between", TABLE_U64 },
		[C_CALLS] = { "calls", "Calls Done", TABLE_U64, TABLE_COL_MINOR },
		[C_STILL] = { "still", "Still", TABLE_STR },
		[C_CALL] = { "call", "In Call", TABLE_STR },
		[C_WHERE] = { "where", "Where (end)", TABLE_STR },
	};
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_thread_snap *b;
	const struct bs_proc_snap *p;
	struct edge_thread et;
	char buf[320], sa[96], sb[96], call[96];
	int last = proc_edges__last(m);
	size_t i = 0;
	int err = table__add_cols(t, cols, NCOLS);

	if (err || last < 0)
		return err; /* no edges (--no-edges), no trigger's snapshot */
	while ((b = trace_snaps__next_thread_at(s, last, &i))) {
		const struct trace_stack *stk = stack_of(m, b);
		const char *c = stk ? stack_call__in(stk, m, call, sizeof(call)) : NULL;
		const char *name = trace_model__thread_name(m, b->h.tid);

		proc_edges__thread(st, m, b->h.pid, b->h.tid, &et);
		p = trace_snaps__proc_at(s, b->h.pid, last);
		table__row(t);
		table__set_u64(t, C_PID, b->h.pid);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, b->h.pid));
		if (p && p->env_rank >= 0)
			table__set_s64(t, C_RANK, p->env_rank);
		table__set_u64(t, C_TID, b->h.tid);
		if (name)
			table__set_str(t, C_THREAD, name);
		table__set_str(t, C_AT_START, state_of(et.start, sa, sizeof(sa)));
		table__set_str(t, C_AT_END, state_of(b, sb, sizeof(sb)));
		if (et.blocked)
			table__set_u64(t, C_SINCE, et.since_ns);
		if (et.start)
			table__set_u64(t, C_CPU, b->cpu_ns - et.start->cpu_ns);
		table__set_u64(t, C_CALLS, et.calls);
		table__set_str(t, C_STILL,
			       et.blocked ? "blocked"
			       : et.stuck ? "same place"
			       : et.start ? "no"
					  : "");
		if (c)
			table__set_str(t, C_CALL, c);
		table__set_str(t, C_WHERE, stack_call__where(stk, m, buf, sizeof(buf)));
	}
	table__add_note(
		t, last ? "The job's threads as read when the recording began (-p) and ended: "
			  "Still blocked = asleep in the same call at both, never run between; "
			  "same place = in the same call at the same line, no call done between."
			: "The job's threads as the trigger's snapshot read them (At End: at "
			  "the dump).");
	return table__err(t);
}

const struct report open_at_edges_report = {
	.name = "open_at_edges",
	.desc = "What each thread was doing when the recording began and ended, and whether it "
		"moved between",
	.new = edges_new,
	.add = edges_add,
	.emit = edges_emit,
	.free = edges_free,
};
