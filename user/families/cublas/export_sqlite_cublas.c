// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cublas family's table in the SQLite export: CUBLAS_EVENTS, nsys's table of cuBLAS calls
 * (start, end, eventClass, globalTid, nameId, its first columns; eventClass 29, nsys's
 * TRACE_PROCESS_EVENT_CUBLAS), then ours: returnValue (the cublasStatus_t), nestingLevel
 * (bs_ucall.depth) and a GEMM's decoded arguments, as dump shows them (NULL for other calls).
 * callchainId: the call's stack (--stacks=cublas), a BPFSIGHT_STACKS id.
 */
#include "cublas.h"
#include "export_sqlite.h"

#define CUBLAS_CLASS 29

static const char cublas_schema[] =
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (29, 'TRACE_PROCESS_EVENT_CUBLAS', 'cuBLAS');"
	"CREATE TABLE CUBLAS_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" nestingLevel INTEGER NOT NULL, handle INTEGER, stream INTEGER, trans TEXT, m INTEGER,"
	" n INTEGER, k INTEGER, lda INTEGER, ldb INTEGER, ldc INTEGER, batch INTEGER, aType TEXT,"
	" bType TEXT, cType TEXT, computeType TEXT, flops INTEGER, callchainId INTEGER);";

static const char cublas_indexes[] =
	"CREATE INDEX CUBLAS_EVENTS_start ON CUBLAS_EVENTS(start);"
	"CREATE INDEX CUBLAS_EVENTS_globalTid ON CUBLAS_EVENTS(globalTid);";

static const char *const cublas_sql[] = {
	"INSERT INTO CUBLAS_EVENTS VALUES"
	" (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int cublas_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, cublas_sql, 1, st);
}

static int cublas_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			 const struct trace_model *m)
{
	static const char *const cols[] = {
		"handle", "stream",	  "trans", "m",	    "n",      "k",
		"lda",	  "ldb",	  "ldc",   "batch", "a_type", "b_type",
		"c_type", "compute_type", "flops"
	};
	struct sq_stmts *c = st;

	return sq_ucall_events_row(s, c->stmt[0], rec, ev, CUBLAS_CLASS, cols,
				   (int)(sizeof(cols) / sizeof(cols[0])));
}

const struct sqlite_family cublas_sqlite = {
	.schema = cublas_schema,
	.indexes = cublas_indexes,
	.open = cublas_open,
	.free = sq_stmts__free,
	.record = cublas_record,
};
