// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proc family's tables in the SQLite export (nsys has none of them):
 *   BPFSIGHT_LOSS         one row per loss record
 *   BPFSIGHT_PROCESSES    one row per process: its latest snapshot, named at the end as stats
 *                         names it
 *   BPFSIGHT_PROC_EVENTS  fork, clone_thread, exec, exit, comm: what happened to a thread
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_sqlite.h"
#include "proc.h"

static const char proc_schema[] =
	"CREATE TABLE BPFSIGHT_LOSS (ts INTEGER NOT NULL, cause TEXT NOT NULL,"
	" causeId INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_PROCESSES (pid INTEGER PRIMARY KEY, ppid INTEGER, name TEXT,"
	" cmdline TEXT, exe TEXT, uid INTEGER, startNs INTEGER);"
	"CREATE TABLE BPFSIGHT_PROC_EVENTS (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" kind TEXT NOT NULL, name TEXT, childPid INTEGER, childTid INTEGER, exitCode INTEGER,"
	" signal INTEGER);";

static const char proc_indexes[] =
	"CREATE INDEX BPFSIGHT_PROC_EVENTS_ts ON BPFSIGHT_PROC_EVENTS(ts);"
	"CREATE INDEX BPFSIGHT_PROC_EVENTS_globalTid ON BPFSIGHT_PROC_EVENTS(globalTid);";

enum proc_stmt { P_LOSS, P_PROCESS, P_NAME, P_EVENT, P_NSTMT };

static const char *const proc_sql[P_NSTMT] = {
	[P_LOSS] = "INSERT INTO BPFSIGHT_LOSS VALUES (?, ?, ?, ?)",
	/* A process is snapshotted again after each exec: keep the latest. */
	[P_PROCESS] = "INSERT INTO BPFSIGHT_PROCESSES VALUES (?, ?, ?, ?, ?, ?, ?)"
		      " ON CONFLICT(pid) DO UPDATE SET ppid = excluded.ppid, name = excluded.name,"
		      " cmdline = excluded.cmdline, exe = excluded.exe, uid = excluded.uid,"
		      " startNs = excluded.startNs",
	/* (Parenthesized: one string, not two elements missing a comma.) */
	[P_NAME] = ("INSERT INTO BPFSIGHT_PROCESSES (pid, name) VALUES (?, ?)"
		    " ON CONFLICT(pid) DO UPDATE SET name = coalesce(excluded.name, name)"),
	[P_EVENT] = "INSERT INTO BPFSIGHT_PROC_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
};

static int proc_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, proc_sql, P_NSTMT, st);
}

/* NUL-padded comm arrays may fill all 16 bytes without a terminator. */
static void sq_bind_comm(sqlite3_stmt *st, int col, const char *comm)
{
	sqlite3_bind_text(st, col, comm, strnlen(comm, BS_COMM_LEN), SQLITE_TRANSIENT);
}

static int proc_loss(struct sq *s, struct sq_stmts *p, const struct bs_hdr *rec,
		     const struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	sqlite3_stmt *st = p->stmt[P_LOSS];

	sqlite3_bind_int64(st, 1, rec->ts);
	sq_bind_text(st, 2, ev ? ev->name : "unknown");
	sqlite3_bind_int64(st, 3, l->cause);
	sqlite3_bind_int64(st, 4, (__s64)l->count);
	return sq_run(s, st);
}

static int proc_process(struct sq *s, struct sq_stmts *sp, const struct bs_hdr *rec,
			const struct trace_model *m)
{
	const struct bs_process *p = (const void *)rec;
	sqlite3_stmt *st = sp->stmt[P_PROCESS];

	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, p->ppid);
	sq_bind_comm(st, 3, p->comm);
	sq_bind_text(st, 4, p->cmdline_id ? trace_model__string(m, p->cmdline_id) : NULL);
	sq_bind_text(st, 5, p->exe_id ? trace_model__string(m, p->exe_id) : NULL);
	sqlite3_bind_int64(st, 6, p->uid);
	if (p->start_ns)
		sqlite3_bind_int64(st, 7, p->start_ns);
	else
		sqlite3_bind_null(st, 7);
	return sq_run(s, st);
}

/* fork, clone_thread, exec, exit, comm: what happened to a thread, and when. */
static int proc_event(struct sq *s, struct sq_stmts *p, const struct bs_hdr *rec,
		      const struct event *ev)
{
	sqlite3_stmt *st = p->stmt[P_EVENT];
	const struct bs_fork *f = (const void *)rec;
	const struct bs_exit *x = (const void *)rec;
	int col;

	if (!ev)
		return 0;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, global_tid(rec->pid, rec->tid));
	sqlite3_bind_text(st, 3, ev->kind, -1, SQLITE_STATIC);
	sq_bind_text(st, 4, ev->name);
	for (col = 5; col <= 8; col++)
		sqlite3_bind_null(st, col);
	if (rec->type == BS_REC_FORK) {
		sqlite3_bind_int64(st, 5, f->child_pid);
		sqlite3_bind_int64(st, 6, f->child_tid);
	} else if (rec->type == BS_REC_EXIT) {
		/* task->exit_code is a wait status: (code << 8) | signal. */
		sqlite3_bind_int64(st, 7, (x->exit_code >> 8) & 0xff);
		sqlite3_bind_int64(st, 8, x->exit_code & 0x7f);
	}
	return sq_run(s, st);
}

static int proc_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	switch (rec->type) {
	case BS_REC_LOSS:
		return proc_loss(s, st, rec, ev);
	case BS_REC_PROCESS:
		return proc_process(s, st, rec, m);
	case BS_REC_FORK:
	case BS_REC_EXEC:
	case BS_REC_EXIT:
	case BS_REC_COMM:
		return proc_event(s, st, rec, ev);
	default:
		/* STRING and THREAD feed the model; names are written at the end. */
		return 0;
	}
}

/* Every process a record named (its main thread), named as the model knows it at the end. */
static int proc_finish(struct sq *s, void *st, const struct trace_model *m)
{
	struct sq_stmts *p = st;
	sqlite3_stmt *q = p->stmt[P_NAME];
	__u32 pid, tid;
	size_t it = 0;
	int err = 0;

	while (!err && sq_next_thread(s, &it, &pid, &tid)) {
		if (pid != tid)
			continue;
		sqlite3_bind_int64(q, 1, pid);
		sq_bind_text(q, 2, trace_model__process_name(m, pid));
		err = sq_run(s, q);
	}
	return err;
}

const struct sqlite_family proc_sqlite = {
	.schema = proc_schema,
	.indexes = proc_indexes,
	.open = proc_open,
	.free = sq_stmts__free,
	.record = proc_record,
	.finish = proc_finish,
};
