// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The blas family's table in the SQLite export: BPFSIGHT_BLAS, one row per CPU BLAS call
 * (nsys has none): start, end, globalTid, nameId, nestingLevel (bs_ucall.depth), and the
 * GEMM's arguments as dump shows them. callchainId: the call's stack (--stacks=blas).
 */
#include "blas.h"
#include "export_sqlite.h"

static const char blas_schema[] =
	"CREATE TABLE BPFSIGHT_BLAS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, nameId INTEGER NOT NULL REFERENCES StringIds(id),"
	" nestingLevel INTEGER NOT NULL, ord TEXT, trans TEXT, m INTEGER, n INTEGER, k INTEGER,"
	" lda INTEGER, ldb INTEGER, ldc INTEGER, dtype TEXT, flops INTEGER, callchainId INTEGER);";

static const char blas_indexes[] = "CREATE INDEX BPFSIGHT_BLAS_start ON BPFSIGHT_BLAS(start);";

static const char *const blas_sql[] = {
	"INSERT INTO BPFSIGHT_BLAS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static int blas_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, blas_sql, 1, st);
}

static int blas_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		       const struct trace_model *m)
{
	static const char *const cols[] = { "order", "trans", "m",   "n",     "k",
					    "lda",   "ldb",   "ldc", "dtype", "flops" };
	struct sq_stmts *c = st;

	return sq_ucall_events_row(s, c->stmt[0], rec, ev, -1, cols,
				   (int)(sizeof(cols) / sizeof(cols[0])));
}

const struct sqlite_family blas_sqlite = {
	.schema = blas_schema,
	.indexes = blas_indexes,
	.open = blas_open,
	.free = sq_stmts__free,
	.record = blas_record,
};
