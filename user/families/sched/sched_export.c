// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sched family in the exports (export_model.h): its off-CPU intervals are slices on their
 * threads, by their style. Tables: BPFSIGHT_OFFCPU, one row per off-CPU interval, and nsys's
 * SCHED_EVENTS, the two switches around it.
 */
#include "export_model.h"
#include "sched.h"

static const struct ex_column switch_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT("cpu"),
	EXC_INT_NN("isSchedIn"),
	EXC_INT("globalTid"),
	EXC_INT("threadState"),
	EXC_INT("threadBlock"),
	{ 0 },
};
static const struct ex_index start_tid_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table sched_events = {
	"SCHED_EVENTS",
	switch_cols,
	.indexes = start_tid_idx,
};

static const struct ex_column offcpu_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("state"),
	EXC_INT_NN("blockedNs"),
	EXC_INT_NN("runnableNs"),
	EXC_INT_NN("oncpuNs"),
	EXC_INT_NN("wakerTid"),
	EXC_INT_NN("cpu"),
	EXC_INT("callchainId"),
	{ 0 },
};
static const struct ex_table sched_offcpu = {
	"BPFSIGHT_OFFCPU",
	offcpu_cols,
	.indexes = start_tid_idx,
};

static const struct ex_table *const sched_tables[] = { &sched_events, &sched_offcpu, NULL };

/*
 * One interval becomes our row plus nsys's two switch rows. The CPU the thread came back on
 * is not recorded: the switch-in row has cpu NULL. runnableNs is clamped to the interval as
 * sched_sum does, so blockedNs + runnableNs = end - start.
 */
static int sched_offcpu_rows(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_offcpu *o = (const void *)rec;
	__s64 gtid = ex_gtid(rec->pid, rec->tid);
	__u64 runnable = o->runnable_ns < o->dur ? o->runnable_ns : o->dur;
	int err;

	err = ex_row(s, &sched_offcpu, EX_ROW_ADD,
		     (struct ex_value[]){
			     EX_V_INT(rec->ts), EX_V_INT(rec->ts + o->dur), EX_V_INT(gtid),
			     EX_V_INT(o->state), EX_V_UINT(o->dur - runnable), EX_V_UINT(runnable),
			     EX_V_UINT(o->oncpu_ns), EX_V_INT(o->waker_tid), EX_V_INT(rec->cpu),
			     EX_V_STACK(ev ? ev->stack : NULL) /* --stacks=sched */ },
		     NULL);
	if (!err)
		err = ex_row(s, &sched_events, EX_ROW_ADD,
			     (struct ex_value[]){ EX_V_INT(rec->ts), EX_V_INT(rec->cpu),
						  EX_V_INT(0), EX_V_INT(gtid), EX_V_INT(o->state),
						  EX_V_NULL },
			     NULL);
	if (!err && o->state != BS_SCHED_DEAD) /* an exiting thread is not switched in again */
		err = ex_row(s, &sched_events, EX_ROW_ADD,
			     (struct ex_value[]){ EX_V_INT(rec->ts + o->dur), EX_V_NULL,
						  EX_V_INT(1), EX_V_INT(gtid), EX_V_NULL,
						  EX_V_NULL },
			     NULL);
	return err;
}

static int sched_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
			const struct event *ev)
{
	if (rec->type != BS_REC_OFFCPU || !ex_wants(s, EX_TABLES))
		return 0;
	return sched_offcpu_rows(s, rec, ev);
}

const struct family_export sched_export = {
	.tables = sched_tables,
	.record = sched_record,
};
