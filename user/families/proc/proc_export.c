// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proc family in the exports (export_model.h): its events are instants by their styles
 * (the loss markers on the trace's own track). Each loss record also counts, beside its
 * marker, in "events lost": in bpfsight's own view one running total of every cause from 0 at
 * the recording's start, in the profiler's a running count per cause.
 *
 * Tables (nsys has none of them):
 *   BPFSIGHT_LOSS         one row per loss record
 *   BPFSIGHT_PROCESSES    one row per process: its latest snapshot, named at the end as stats
 *                         names it
 *   BPFSIGHT_PROC_EVENTS  fork, clone_thread, exec, exit, comm: what happened to a thread
 *
 * The rows (EX_ROWS, ClickHouse): a user stack's call, line, site (proc_stack_keys).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_model.h"
#include "frame_sum.h"
#include "proc.h"
#include "stack_call.h"

static const struct ex_column loss_cols[] = {
	EXC_INT_NN("ts"), EXC_TEXT_NN("cause"), EXC_INT_NN("causeId"), EXC_INT_NN("count"), { 0 },
};
static const struct ex_table loss_table = { "BPFSIGHT_LOSS", loss_cols };

static const struct ex_column procs_cols[] = {
	{ "pid", EX_COL_INTEGER, EX_COL_KEY },
	EXC_INT("ppid"),
	EXC_TEXT("name"),
	EXC_TEXT("cmdline"),
	EXC_TEXT("exe"),
	EXC_INT("uid"),
	EXC_INT("startNs"),
	{ 0 },
};
static const struct ex_table procs_table = { "BPFSIGHT_PROCESSES", procs_cols };

static const struct ex_column events_cols[] = {
	EXC_INT_NN("ts"),    EXC_INT_NN("globalTid"), EXC_TEXT_NN("kind"),
	EXC_TEXT("name"),    EXC_INT("childPid"),     EXC_INT("childTid"),
	EXC_INT("exitCode"), EXC_INT("signal"),	      { 0 },
};
static const struct ex_index events_idx[] = {
	{ "ts", "ts" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table events_table = {
	"BPFSIGHT_PROC_EVENTS",
	events_cols,
	.indexes = events_idx,
};

static const struct ex_table *const proc_tables[] = {
	&loss_table,
	&procs_table,
	&events_table,
	NULL,
};

static const struct ex_counter lost_by_cause = {
	.on = { .kind = EX_GLOBAL },
	.name = "events lost",
	.cat = "loss",
	.views = EX_PROFILER,
};

static const struct ex_counter lost_total = {
	.on = { .kind = EX_GLOBAL },
	.name = "events lost",
	.desc = "Events the recorder lost so far, every cause together (bpfsight info shows them "
		"by cause).",
	.unit = EX_UNIT_COUNT,
	.views = EX_OWN,
	.flags = EX_FROM_ZERO,
};

struct proc_export {
	__u64 lost[BS_LOSS_MAX + 1]; /* cumulative per cause (loss_cause__slot) */
	__u64 total;
};

static int proc_open(struct ex_sink *s, void **st)
{
	*st = calloc(1, sizeof(struct proc_export));
	return *st ? 0 : -ENOMEM;
}

/* A loss marker, its counts, its row. */
static int proc_loss(struct ex_sink *s, struct proc_export *p, const struct bs_hdr *rec,
		     const struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	const char *cause = ev ? ev->name : "unknown";
	__u32 slot;
	int err = ev ? ex_event_styled(s, rec, ev) : 0;

	if (err || rec->size < sizeof(*l))
		return err;
	slot = loss_cause__slot(l->cause);
	p->lost[slot] += l->count;
	p->total += l->count;
	if (ev)
		err = ex_count1(s, &lost_by_cause, rec->ts, cause, EX_V_UINT(p->lost[slot]));
	if (!err)
		err = ex_count1(s, &lost_total, rec->ts, "total", EX_V_INT(p->total));
	if (!err)
		err = ex_row(s, &loss_table, EX_ROW_ADD,
			     (struct ex_value[]){ EX_V_INT(rec->ts), EX_V_TEXT(cause),
						  EX_V_INT(l->cause), EX_V_UINT(l->count) },
			     NULL);
	return err;
}

/* A process's snapshot: again after each exec, the latest stays. */
static int proc_process(struct ex_sink *s, const struct bs_hdr *rec)
{
	const struct bs_process *p = (const void *)rec;
	const struct trace_model *m = s->model;

	return ex_row(
		s, &procs_table, EX_ROW_REPLACE,
		(struct ex_value[]){
			EX_V_INT(rec->pid),
			EX_V_INT(p->ppid),
			(struct ex_value){ .kind = EX_TEXTN, .s = p->comm, .n = BS_COMM_LEN },
			EX_V_TEXT(p->cmdline_id ? trace_model__string(m, p->cmdline_id) : NULL),
			EX_V_TEXT(p->exe_id ? trace_model__string(m, p->exe_id) : NULL),
			EX_V_INT(p->uid),
			EX_V_INT_IF(p->start_ns, p->start_ns),
		},
		NULL);
}

/* fork, clone_thread, exec, exit, comm: what happened to a thread, and when. */
static int proc_event(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_fork *f = (const void *)rec;
	const struct bs_exit *x = (const void *)rec;
	int fork = rec->type == BS_REC_FORK, exit = rec->type == BS_REC_EXIT;

	if (!ev)
		return 0;
	/* task->exit_code is a wait status: (code << 8) | signal. */
	return ex_row(s, &events_table, EX_ROW_ADD,
		      (struct ex_value[]){
			      EX_V_INT(rec->ts),
			      EX_V_INT(ex_gtid(rec->pid, rec->tid)),
			      EX_V_TEXT(ev->kind),
			      EX_V_TEXT(ev->name),
			      EX_V_INT_IF(fork, f->child_pid),
			      EX_V_INT_IF(fork, f->child_tid),
			      EX_V_INT_IF(exit, (x->exit_code >> 8) & 0xff),
			      EX_V_INT_IF(exit, x->exit_code & 0x7f),
		      },
		      NULL);
}

static int proc_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	int err;

	switch (rec->type) {
	case BS_REC_LOSS:
		err = proc_loss(s, st, rec, ev);
		return err ? err : 1;
	case BS_REC_PROCESS:
		return proc_process(s, rec);
	case BS_REC_FORK:
	case BS_REC_EXEC:
	case BS_REC_EXIT:
	case BS_REC_COMM:
		return proc_event(s, rec, ev);
	default:
		/* STRING and THREAD feed the model; names are written at the end. */
		return 0;
	}
}

/* Every process a record named (its main thread), named as the model knows it at the end. */
static int proc_finish(struct ex_sink *s, void *st)
{
	__u32 pid, tid;
	size_t it = 0;
	int err = 0;

	while (!err && ex_next_thread(s, &it, &pid, &tid)) {
		struct ex_value v[7] = {
			EX_V_INT(pid),
			[2] = EX_V_TEXT(trace_model__process_name(s->model, pid)),
		};

		if (pid == tid)
			err = ex_row(s, &procs_table, EX_ROW_MERGE, v, NULL);
	}
	return err;
}

/* FR's place in S, 1-based; 0 for none. */
static unsigned frame_index(const struct trace_stack *s, const struct bs_frame *fr)
{
	return fr && s ? (unsigned)(fr - s->frames) + 1 : 0;
}

/*
 * The rows (EX_ROWS): what the server's reports read of a user stack beside its frames, on its
 * `stack` row: rank_waits groups by the call it is in (stack_call__in, cut where the report
 * cuts it: 63 bytes) and its line in the job's own code (`own`, frame_sum__own_site);
 * gil_stacks and offcpu_stacks sum it under the frames frame_sum does: that line (`site`) and
 * the library's line beside it (`via`), their 1-based places in its frames, left out when
 * none. The hang's and the edges' rules say a thread's line as stack_call__where does:
 * `where`, when it is not `own` (a stack in the interpreter's library only).
 */
static void proc_stack_keys(struct ex_sink *s, void *st, const struct trace_stack *stack,
			    int kernel)
{
	const struct trace_model *m = s->model;
	const struct bs_frame *via, *own;
	char call[64], at[256] = "", where[320];

	(void)st;
	if (kernel)
		return;
	own = frame_sum__own_site(stack, m, &via);
	if (stack && stack_call__in(stack, m, call, sizeof(call)))
		ex_key(s, "call", EX_V_TEXT(call));
	if (own)
		ex_key(s, "own", EX_V_TEXT(stack_call__frame(own, m, at, sizeof(at))));
	if (strcmp(stack_call__where(stack, m, where, sizeof(where)), at))
		ex_key(s, "where", EX_V_TEXT(where));
	if (frame_index(stack, own))
		ex_key(s, "site", EX_V_UINT(frame_index(stack, own)));
	if (frame_index(stack, via))
		ex_key(s, "via", EX_V_UINT(frame_index(stack, via)));
}

static const struct ex_rows proc_rows = {
	.new = proc_ledger_rows__new,
	.free = proc_ledger_rows__free,
	.record = proc_ledger_rows__record,
	.end = proc_ledger_rows__end,
	.stack = proc_stack_keys,
};

const struct family_export proc_export = {
	.tables = proc_tables,
	.open = proc_open,
	.free = free,
	.record = proc_record,
	.finish = proc_finish,
	.rows = &proc_rows,
};
