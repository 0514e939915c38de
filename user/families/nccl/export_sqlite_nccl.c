// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family's table in the SQLite export: BPFSIGHT_NCCL, one row per NCCL call.
 * callchainId: the call's stack (--stacks=nccl), a BPFSIGHT_STACKS id.
 */
#include "export_sqlite.h"
#include "nccl.h"

static const char nccl_schema[] =
	"CREATE TABLE BPFSIGHT_NCCL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, nameId INTEGER NOT NULL REFERENCES StringIds(id),"
	" returnValue INTEGER NOT NULL, nestingLevel INTEGER NOT NULL, comm INTEGER,"
	" rank INTEGER, nranks INTEGER, count INTEGER, bytes INTEGER, datatype TEXT, op TEXT,"
	" root INTEGER, peer INTEGER, stream INTEGER, groupDepth INTEGER NOT NULL,"
	" groupNs INTEGER, uniqueIdHash TEXT, callchainId INTEGER, seq INTEGER);";

static const char nccl_indexes[] =
	"CREATE INDEX BPFSIGHT_NCCL_start ON BPFSIGHT_NCCL(start);"
	"CREATE INDEX BPFSIGHT_NCCL_globalTid ON BPFSIGHT_NCCL(globalTid);";

static const char *const nccl_sql[] = {
	"INSERT INTO BPFSIGHT_NCCL VALUES"
	" (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int nccl_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, nccl_sql, 1, st);
}

/* One NCCL API call, with what dump shows: the communicator's rank joined by the decoder. */
static int nccl_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	static const char *const cols[] = { "comm",	"rank", "nranks", "count", "bytes",
					    "datatype", "op",	"root",	  "peer",  "stream" };
	struct sq_stmts *c = st;
	sqlite3_stmt *q = c->stmt[0];
	int err;
	__u32 name = sq_call_row(s, q, ev, &err);

	if (!name)
		return err;
	sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(q, 4, name);
	sqlite3_bind_int64(q, 5, sq_arg_int(ev, "ret", 0));
	sqlite3_bind_int64(q, 6, sq_arg_int(ev, "depth", 0));
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		sq_bind_arg(q, 7 + (int)i, ev, cols[i]);
	sqlite3_bind_int64(q, 17, sq_arg_int(ev, "group_depth", 0));
	sq_bind_arg(q, 18, ev, "group_ns");
	sq_bind_arg(q, 19, ev, "unique_id_hash");
	sq_bind_stack(q, 20, ev->stack); /* --stacks=nccl */
	sq_bind_arg(q, 21, ev, "seq");	 /* a collective's number on its communicator */
	return sq_run(s, q);
}

const struct sqlite_family nccl_sqlite = {
	.schema = nccl_schema,
	.indexes = nccl_indexes,
	.open = nccl_open,
	.free = sq_stmts__free,
	.record = nccl_record,
};
