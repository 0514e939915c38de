// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cudnn family's table in the SQLite export: CUDNN_EVENTS, nsys's table of cuDNN calls
 * (start, end, eventClass, globalTid, nameId; eventClass 28, nsys's TRACE_PROCESS_EVENT_CUDNN),
 * then ours: returnValue (the cudnnStatus_t), nestingLevel (bs_ucall.depth: 1 for the
 * sub-library's half of a call), handle, and what a cudnnBackendExecute ran (ops, and its
 * matmul's batch, m, n, k, flops), NULL where the call does not say it.
 * callchainId: the call's stack (--stacks=cudnn), a BPFSIGHT_STACKS id.
 */
#include "cudnn.h"
#include "export_sqlite.h"

#define CUDNN_CLASS 28

static const char cudnn_schema[] =
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (28, 'TRACE_PROCESS_EVENT_CUDNN', 'cuDNN');"
	"CREATE TABLE CUDNN_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" nestingLevel INTEGER NOT NULL, handle INTEGER, ops TEXT, batch INTEGER, m INTEGER,"
	" n INTEGER, k INTEGER, flops INTEGER, callchainId INTEGER);";

static const char cudnn_indexes[] =
	"CREATE INDEX CUDNN_EVENTS_start ON CUDNN_EVENTS(start);"
	"CREATE INDEX CUDNN_EVENTS_globalTid ON CUDNN_EVENTS(globalTid);";

static const char *const cudnn_sql[] = {
	"INSERT INTO CUDNN_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int cudnn_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, cudnn_sql, 1, st);
}

static int cudnn_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			const struct trace_model *m)
{
	static const char *const cols[] = { "handle", "ops", "batch", "m", "n", "k", "flops" };
	struct sq_stmts *c = st;

	return sq_ucall_events_row(s, c->stmt[0], rec, ev, CUDNN_CLASS, cols,
				   (int)(sizeof(cols) / sizeof(cols[0])));
}

const struct sqlite_family cudnn_sqlite = {
	.schema = cudnn_schema,
	.indexes = cudnn_indexes,
	.open = cudnn_open,
	.free = sq_stmts__free,
	.record = cudnn_record,
};
