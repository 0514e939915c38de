// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family's tables in the SQLite export:
 *   CUPTI_ACTIVITY_KIND_RUNTIME  nsys's, one row per CUDA call, with nsys's columns in nsys's
 *                                order, then three of ours: nestingLevel (bs_ucall.depth: 0 = a
 *                                call the application made), id, which BPFSIGHT_CUDA_ARGS.callId
 *                                refers to, and cuptiOnly (1: a row from CUPTI's own record of a
 *                                call no cuda-family event was matched to, the gpu family's).
 *                                correlationId is CUPTI's, set on the launching calls of GPU
 *                                work by the gpu family (export_sqlite_gpu.c);
 *   BPFSIGHT_CUDA_ARGS           a CUDA call's decoded arguments (nsys has no table for them).
 * callchainId: the call's stack (--stacks=cuda), a BPFSIGHT_STACKS id.
 */
#include <string.h>
#include "cuda.h"
#include "export_sqlite.h"

static const char cuda_schema[] =
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES"
	" (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'),"
	" (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver');"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" callchainId INTEGER, nestingLevel INTEGER NOT NULL, id INTEGER NOT NULL PRIMARY KEY,"
	" cuptiOnly INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_CUDA_ARGS (callId INTEGER NOT NULL PRIMARY KEY"
	" REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(id), kernelNameId INTEGER REFERENCES StringIds(id),"
	" gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,"
	" blockZ INTEGER, sharedBytes INTEGER, bytes INTEGER, copyKind TEXT, stream INTEGER,"
	" dst INTEGER, src INTEGER, ptr INTEGER);";

static const char cuda_indexes[] =
	"CREATE INDEX CUPTI_ACTIVITY_KIND_RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_RUNTIME_globalTid"
	" ON CUPTI_ACTIVITY_KIND_RUNTIME(globalTid);";

enum cuda_stmt { U_CUDA, U_ARGS, U_NSTMT };

static const char *const cuda_sql[U_NSTMT] = {
	/* id NULL: the next of the table's (rows of the gpu family's included). */
	[U_CUDA] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
		   " (?, ?, ?, ?, NULL, ?, ?, ?, ?, NULL, 0)",
	[U_ARGS] = "INSERT INTO BPFSIGHT_CUDA_ARGS VALUES"
		   " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int cuda_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, cuda_sql, U_NSTMT, st);
}

/* nsys's class of a CUDA call: the driver API is cu*, the runtime cuda* and __cuda*. */
static int cuda_class(const char *name)
{
	return !strncmp(name, "cu", 2) && strncmp(name, "cuda", 4) ? SQ_CUDA_DRIVER_CLASS
								   : SQ_CUDA_RUNTIME_CLASS;
}

/*
 * The arguments people filter and group by: the launched function (by name, through
 * StringIds), launch shape, sizes, copy direction, stream and pointers. Only calls that have
 * one of them get a row.
 */
static int cuda_args(struct sq *s, struct sq_stmts *c, const struct event *ev, __s64 call)
{
	static const char *const cols[] = { "grid_x",  "grid_y",  "grid_z",	  "block_x",
					    "block_y", "block_z", "shared_bytes", "bytes",
					    "kind",    "stream",  "dst",	  "src",
					    "ptr" };
	sqlite3_stmt *st = c->stmt[U_ARGS];
	const struct event_arg *fn = event__arg(ev, "kernel");
	int any = 0, err = 0;
	__u32 id;

	if (!fn)
		fn = event__arg(ev, "func");
	sqlite3_bind_int64(st, 1, call);
	if (fn && fn->kind == EVENT_ARG_STR) {
		id = sq_intern(s, fn->str, &err);
		if (!id)
			return err;
		sqlite3_bind_int64(st, 2, id);
		any = 1;
	} else {
		sqlite3_bind_null(st, 2);
	}
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		any |= sq_bind_arg(st, 3 + (int)i, ev, cols[i]);
	return any ? sq_run(s, st) : 0;
}

/* One CUDA API call: nsys's row, then its arguments. */
static int cuda_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	struct sq_stmts *c = st;
	sqlite3_stmt *q = c->stmt[U_CUDA];
	int err;
	__u32 name = sq_call_row(s, q, ev, &err);

	if (!name)
		return err;
	sqlite3_bind_int(q, 3, cuda_class(ev->name));
	sqlite3_bind_int64(q, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(q, 5, name);
	sqlite3_bind_int64(q, 6, sq_arg_int(ev, "ret", 0));
	sq_bind_stack(q, 7, ev->stack); /* --stacks=cuda */
	sqlite3_bind_int64(q, 8, sq_arg_int(ev, "depth", 0));
	err = sq_run(s, q);
	return err ? err : cuda_args(s, c, ev, sqlite3_last_insert_rowid(s->db));
}

const struct sqlite_family cuda_sqlite = {
	.schema = cuda_schema,
	.indexes = cuda_indexes,
	.open = cuda_open,
	.free = sq_stmts__free,
	.record = cuda_record,
};
