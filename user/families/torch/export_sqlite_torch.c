// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family's tables in the SQLite export (nsys has none for PyTorch's ops):
 *   BPFSIGHT_TORCH_OPS    one row per op: start, end, thread, name (-> StringIds), scope (dump's
 *                         text), sequence number and forward thread (NULL without one), torch's
 *                         thread id, depth, input shapes and concrete inputs (NULL without
 *                         --torch-shapes), callchainId (its stack with --stacks=torch:
 *                         BPFSIGHT_CALLCHAINS)
 *   BPFSIGHT_TORCH_STEPS  one row per training step: start, end, thread, step, scope name
 * Kernels join an op by time on their launching thread (CUPTI_ACTIVITY_KIND_KERNEL's
 * globalTid and its launching call's start), as torch_op_kernels does.
 */
#include "export_sqlite.h"
#include "torch.h"

static const char torch_schema[] =
	"CREATE TABLE BPFSIGHT_TORCH_OPS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, nameId INTEGER NOT NULL, scope TEXT NOT NULL,"
	" seq INTEGER, fwdThread INTEGER, torchThread INTEGER NOT NULL, depth INTEGER NOT NULL,"
	" shapes TEXT, concrete TEXT, callchainId INTEGER);"
	"CREATE TABLE BPFSIGHT_TORCH_STEPS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, step INTEGER NOT NULL, scopeNameId INTEGER NOT NULL);";

static const char torch_indexes[] =
	"CREATE INDEX BPFSIGHT_TORCH_OPS_start ON BPFSIGHT_TORCH_OPS(start);"
	"CREATE INDEX BPFSIGHT_TORCH_OPS_globalTid ON BPFSIGHT_TORCH_OPS(globalTid);";

enum { T_OP, T_STEP, T_NSTMT };

static const char *const torch_sql[T_NSTMT] = {
	[T_OP] = "INSERT INTO BPFSIGHT_TORCH_OPS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[T_STEP] = "INSERT INTO BPFSIGHT_TORCH_STEPS VALUES (?, ?, ?, ?, ?)",
};

static int torch_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, torch_sql, T_NSTMT, st);
}

static int torch_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			const struct trace_model *m)
{
	const struct bs_torch_op *r = (const void *)rec;
	const struct bs_torch_step *p = (const void *)rec;
	struct sq_stmts *c = st;
	sqlite3_stmt *q;
	int err = 0;

	if (!ev)
		return 0;
	if (torch_op__valid(rec)) {
		q = c->stmt[T_OP];
		sqlite3_bind_int64(q, 1, rec->ts);
		sqlite3_bind_int64(q, 2, rec->ts + r->dur);
		sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
		sqlite3_bind_int64(q, 4, sq_intern(s, ev->name, &err));
		sq_bind_text(q, 5, torch_scope_name(r->scope));
		sq_bind_arg(q, 6, ev, "seq");
		sq_bind_arg(q, 7, ev, "fwd_thread");
		sqlite3_bind_int64(q, 8, (__s64)r->torch_tid);
		sqlite3_bind_int(q, 9, r->depth);
		sq_bind_arg(q, 10, ev, "shapes");
		sq_bind_arg(q, 11, ev, "concrete");
		sq_bind_stack(q, 12, ev->stack);
	} else if (rec->type == BS_REC_TORCH_STEP) {
		q = c->stmt[T_STEP];
		sqlite3_bind_int64(q, 1, rec->ts);
		sqlite3_bind_int64(q, 2, rec->ts + p->dur);
		sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
		sqlite3_bind_int64(q, 4, (__s64)p->step);
		sqlite3_bind_int64(q, 5, sq_intern(s, event__arg(ev, "scope")->str, &err));
	} else {
		return 0;
	}
	return err ? err : sq_run(s, q);
}

const struct sqlite_family torch_sqlite = {
	.schema = torch_schema,
	.indexes = torch_indexes,
	.open = torch_open,
	.free = sq_stmts__free,
	.record = torch_record,
};
