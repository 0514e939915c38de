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
	const struct bs_ucall *u = (const void *)rec;
	sqlite3_stmt *q = ((struct sq_stmts *)st)->stmt[0];
	int err;
	__u32 name = sq_call_row(s, q, ev, &err);

	if (!name)
		return err;
	sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(q, 4, name);
	sqlite3_bind_int64(q, 5, u->depth);
	for (int i = 0; i < (int)(sizeof(cols) / sizeof(cols[0])); i++)
		sq_bind_arg(q, 6 + i, ev, cols[i]);
	sq_bind_stack(q, 16, ev->stack);
	return sq_run(s, q);
}

const struct sqlite_family blas_sqlite = {
	.schema = blas_schema,
	.indexes = blas_indexes,
	.open = blas_open,
	.free = sq_stmts__free,
	.record = blas_record,
};
