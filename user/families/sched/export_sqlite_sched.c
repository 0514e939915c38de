// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sched family's tables in the SQLite export: BPFSIGHT_OFFCPU, one row per off-CPU
 * interval, and nsys's SCHED_EVENTS, the two switches around it.
 */
#include <errno.h>
#include <stdlib.h>
#include "export_sqlite.h"
#include "sched.h"

static const char sched_schema[] =
	"CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER, isSchedIn INTEGER NOT NULL,"
	" globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);"
	"CREATE TABLE BPFSIGHT_OFFCPU (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, state INTEGER NOT NULL, blockedNs INTEGER NOT NULL,"
	" runnableNs INTEGER NOT NULL, oncpuNs INTEGER NOT NULL, wakerTid INTEGER NOT NULL,"
	" cpu INTEGER NOT NULL, callchainId INTEGER);";

static const char sched_indexes[] =
	"CREATE INDEX SCHED_EVENTS_start ON SCHED_EVENTS(start);"
	"CREATE INDEX SCHED_EVENTS_globalTid ON SCHED_EVENTS(globalTid);"
	"CREATE INDEX BPFSIGHT_OFFCPU_start ON BPFSIGHT_OFFCPU(start);"
	"CREATE INDEX BPFSIGHT_OFFCPU_globalTid ON BPFSIGHT_OFFCPU(globalTid);";

enum sched_stmt { S_SWITCH, S_OFFCPU, S_NSTMT };

static const char *const sched_sql[S_NSTMT] = {
	[S_SWITCH] = "INSERT INTO SCHED_EVENTS VALUES (?, ?, ?, ?, ?, NULL)",
	[S_OFFCPU] = "INSERT INTO BPFSIGHT_OFFCPU VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int sched_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, sched_sql, S_NSTMT, st);
}

static int sched_row(struct sq *s, struct sq_stmts *c, __u64 ts, const __u32 *cpu, int in,
		     __s64 gtid, const __u32 *state)
{
	sqlite3_stmt *st = c->stmt[S_SWITCH];

	sqlite3_bind_int64(st, 1, ts);
	if (cpu)
		sqlite3_bind_int64(st, 2, *cpu);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int(st, 3, in);
	sqlite3_bind_int64(st, 4, gtid);
	if (state)
		sqlite3_bind_int64(st, 5, *state);
	else
		sqlite3_bind_null(st, 5);
	return sq_run(s, st);
}

/*
 * One interval becomes our row plus nsys's two switch rows. The CPU the thread came back on
 * is not recorded: the switch-in row has cpu NULL. runnableNs is clamped to the interval as
 * sched_sum does, so blockedNs + runnableNs = end - start.
 */
static int sched_offcpu(struct sq *s, struct sq_stmts *c, const struct bs_hdr *rec,
			const struct event *ev)
{
	const struct bs_offcpu *o = (const void *)rec;
	sqlite3_stmt *st = c->stmt[S_OFFCPU];
	__s64 gtid = global_tid(rec->pid, rec->tid);
	__u64 runnable = o->runnable_ns < o->dur ? o->runnable_ns : o->dur;
	int err;

	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + o->dur);
	sqlite3_bind_int64(st, 3, gtid);
	sqlite3_bind_int64(st, 4, o->state);
	sqlite3_bind_int64(st, 5, o->dur - runnable);
	sqlite3_bind_int64(st, 6, runnable);
	sqlite3_bind_int64(st, 7, o->oncpu_ns);
	sqlite3_bind_int64(st, 8, o->waker_tid);
	sqlite3_bind_int64(st, 9, rec->cpu);
	sq_bind_stack(st, 10, ev ? ev->stack : NULL); /* --stacks=sched */
	err = sq_run(s, st);
	if (!err)
		err = sched_row(s, c, rec->ts, &rec->cpu, 0, gtid, &o->state);
	if (!err && o->state != BS_SCHED_DEAD) /* an exiting thread is not switched in again */
		err = sched_row(s, c, rec->ts + o->dur, NULL, 1, gtid, NULL);
	return err;
}

static int sched_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			const struct trace_model *m)
{
	return rec->type == BS_REC_OFFCPU ? sched_offcpu(s, st, rec, ev) : 0;
}

const struct sqlite_family sched_sqlite = {
	.schema = sched_schema,
	.indexes = sched_indexes,
	.open = sched_open,
	.free = sq_stmts__free,
	.record = sched_record,
};
