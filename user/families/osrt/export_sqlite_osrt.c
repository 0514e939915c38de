// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The osrt family's tables in the SQLite export: nsys's OSRT_API, one row per system call
 * record (at or above the threshold), and BPFSIGHT_SYSCALL_AGG, the in-kernel totals per
 * (thread, system call) of every call (the last snapshot plus what exited threads of that tid
 * closed), so that osrt_sum's numbers are a query.
 *
 * Memory: the statements, a name id per system call number, the closed totals per key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_sqlite.h"
#include "osrt.h"
#include "hmap.h"
#include "syscall_names.h"

#define NR_CACHE   1024 /* syscall numbers whose name id is cached in an array */
#define OSRT_CLASS 27	/* nsys's TRACE_PROCESS_EVENT_OS_RUNTIME */

static const char osrt_schema[] =
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES"
	" (27, 'TRACE_PROCESS_EVENT_OS_RUNTIME', 'OS runtime libraries');"
	"CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" nestingLevel INTEGER, callchainId INTEGER);"
	"CREATE TABLE BPFSIGHT_SYSCALL_AGG (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" nr INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), count INTEGER NOT NULL,"
	" totalNs INTEGER NOT NULL, minNs INTEGER NOT NULL, maxNs INTEGER NOT NULL,"
	" snapshotTs INTEGER NOT NULL, PRIMARY KEY (pid, tid, nr)) WITHOUT ROWID;";

static const char osrt_indexes[] = "CREATE INDEX OSRT_API_start ON OSRT_API(start);"
				   "CREATE INDEX OSRT_API_globalTid ON OSRT_API(globalTid);";

enum osrt_stmt { O_CALL, O_AGG, O_NSTMT };

static const char *const osrt_sql[O_NSTMT] = {
	[O_CALL] = "INSERT INTO OSRT_API VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, ?)",
	/* Snapshots are cumulative: the last one per key is the one that counts. */
	[O_AGG] =
		"INSERT OR REPLACE INTO BPFSIGHT_SYSCALL_AGG VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

struct sq_osrt {
	sqlite3_stmt *stmt[O_NSTMT];
	struct hmap *agg_closed; /* {pid << 32 | tid, nr} -> bs_syscall_agg_val: finals */
	__u32 nr_name[NR_CACHE]; /* syscall nr -> StringIds.id, 0 = not yet */
};

static void osrt_free(void *st)
{
	struct sq_osrt *o = st;

	sq_finalize(o->stmt, O_NSTMT);
	hmap__free(o->agg_closed);
	free(o);
}

static int osrt_open(struct sq *s, void **st)
{
	struct sq_osrt *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	*st = o;
	o->agg_closed = hmap__new(sizeof(struct bs_syscall_agg_val));
	if (!o->agg_closed)
		return -ENOMEM;
	return sq_prepare(s, osrt_sql, o->stmt, O_NSTMT);
}

/* Same naming as the osrt decoder: "syscall_N" for numbers the table does not know. */
static __u32 syscall_name_id(struct sq *s, struct sq_osrt *o, __u32 nr, int *err)
{
	char buf[32];
	const char *name = syscall_name(nr);
	__u32 id;

	if (nr < NR_CACHE && o->nr_name[nr])
		return o->nr_name[nr];
	if (!name) {
		snprintf(buf, sizeof(buf), "syscall_%u", nr);
		name = buf;
	}
	id = sq_intern(s, name, err);
	if (id && nr < NR_CACHE)
		o->nr_name[nr] = id;
	return id;
}

static int osrt_syscall(struct sq *s, struct sq_osrt *o, const struct bs_hdr *rec,
			const struct event *ev)
{
	const struct bs_syscall *c = (const void *)rec;
	sqlite3_stmt *st = o->stmt[O_CALL];
	int err = 0;
	__u32 name;

	name = syscall_name_id(s, o, c->nr, &err);
	if (!name)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + c->dur);
	sqlite3_bind_int(st, 3, OSRT_CLASS);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, c->ret);
	sq_bind_stack(st, 7, ev ? ev->stack : NULL); /* --stacks=osrt */
	return sq_run(s, st);
}

static int osrt_agg(struct sq *s, struct sq_osrt *o, const struct bs_hdr *rec)
{
	const struct bs_syscall_agg *a = (const void *)rec;
	sqlite3_stmt *st = o->stmt[O_AGG];
	int err = 0;
	__u32 name;

	struct bs_syscall_agg_val *closed, row;

	name = syscall_name_id(s, o, a->nr, &err);
	if (!name)
		return err;
	/*
	 * The row is the key's closed totals (BS_AGG_FINAL: exited threads whose tid came back,
	 * evicted entries) plus its current snapshot.
	 */
	closed = hmap__get(o->agg_closed, (struct hkey){ (__u64)rec->pid << 32 | rec->tid, a->nr },
			   1);
	if (!closed)
		return -ENOMEM;
	row = *closed;
	if (a->count) {
		row.min_ns = row.count && row.min_ns < a->min_ns ? row.min_ns : a->min_ns;
		row.max_ns = row.count && row.max_ns > a->max_ns ? row.max_ns : a->max_ns;
		row.count += a->count;
		row.total_ns += a->total_ns;
	}
	if (a->flags & BS_AGG_FINAL)
		*closed = row;
	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, rec->tid);
	sqlite3_bind_int64(st, 3, a->nr);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, (__s64)row.count);
	sqlite3_bind_int64(st, 7, (__s64)row.total_ns);
	sqlite3_bind_int64(st, 8, (__s64)row.min_ns);
	sqlite3_bind_int64(st, 9, (__s64)row.max_ns);
	sqlite3_bind_int64(st, 10, rec->ts);
	return sq_run(s, st);
}

static int osrt_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	switch (rec->type) {
	case BS_REC_SYSCALL:
		return osrt_syscall(s, st, rec, ev);
	case BS_REC_SYSCALL_AGG:
		return osrt_agg(s, st, rec);
	default:
		return 0;
	}
}

const struct sqlite_family osrt_sqlite = {
	.schema = osrt_schema,
	.indexes = osrt_indexes,
	.open = osrt_open,
	.free = osrt_free,
	.record = osrt_record,
};
