// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The pyfunc family's table in the SQLite export (nsys writes its Python function ranges as
 * NVTX ranges; a table of their own keeps what they are: docs/EXPORT.md):
 *   BPFSIGHT_PYFUNC_EVENTS  one row per call piece: start, end, globalTid, nameId (the
 *                           function "module:Qual.name" -> StringIds), fileId (its file ->
 *                           StringIds), line (its first line), domainId (the spec's domain ->
 *                           StringIds, NULL: none), depth (named calls open around it on its
 *                           thread), endKind (return, unwind, yield, open), resumed (1: it
 *                           began at a generator's or coroutine's resume), beganBefore (1:
 *                           already running when tracing began, which start is)
 * NVTX ranges and torch ops of the same thread join it by time on globalTid.
 */
#include "export_sqlite.h"
#include "pyfunc_read.h"

static const char pyfunc_schema[] =
	"CREATE TABLE BPFSIGHT_PYFUNC_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, nameId INTEGER NOT NULL, fileId INTEGER NOT NULL,"
	" line INTEGER NOT NULL, domainId INTEGER, depth INTEGER NOT NULL, endKind TEXT NOT NULL,"
	" resumed INTEGER NOT NULL, beganBefore INTEGER NOT NULL);";

static const char pyfunc_indexes[] =
	"CREATE INDEX BPFSIGHT_PYFUNC_EVENTS_start ON BPFSIGHT_PYFUNC_EVENTS(start);"
	"CREATE INDEX BPFSIGHT_PYFUNC_EVENTS_globalTid ON BPFSIGHT_PYFUNC_EVENTS(globalTid);";

static const char *const pyfunc_sql[] = {
	"INSERT INTO BPFSIGHT_PYFUNC_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int pyfunc_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, pyfunc_sql, 1, st);
}

static int pyfunc_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			 const struct trace_model *m)
{
	const struct bs_pyfunc_call *r = (const void *)rec;
	sqlite3_stmt *q = ((struct sq_stmts *)st)->stmt[0];
	const struct event_arg *file, *domain;
	int err = 0;

	if (!ev || !pyfunc_call__valid(rec))
		return 0;
	file = event__arg(ev, "file");
	domain = event__arg(ev, "domain");
	sqlite3_bind_int64(q, 1, rec->ts);
	sqlite3_bind_int64(q, 2, rec->ts + r->dur);
	sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(q, 4, sq_intern(s, ev->name, &err));
	sqlite3_bind_int64(q, 5, sq_intern(s, file ? file->str : "", &err));
	sqlite3_bind_int64(q, 6, r->line);
	if (domain)
		sqlite3_bind_int64(q, 7, sq_intern(s, domain->str, &err));
	else
		sqlite3_bind_null(q, 7);
	sqlite3_bind_int(q, 8, r->depth);
	sq_bind_text(q, 9, pyfunc_end_name(r->end));
	sqlite3_bind_int(q, 10, !!(r->flags & BS_PYFUNC_RESUMED));
	sqlite3_bind_int(q, 11, !!(r->flags & BS_PYFUNC_BEGAN_BEFORE));
	return err ? err : sq_run(s, q);
}

const struct sqlite_family pyfunc_sqlite = {
	.schema = pyfunc_schema,
	.indexes = pyfunc_indexes,
	.open = pyfunc_open,
	.free = sq_stmts__free,
	.record = pyfunc_record,
};
