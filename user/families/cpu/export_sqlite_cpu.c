// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cpu family's table in the SQLite export:
 *   BPFSIGHT_CPU_SAMPLES  one row per sample: its thread, CPU, whether it was taken in kernel
 *                         code (its stack is then where the thread entered the kernel) and
 *                         whether the thread held the GIL (NULL: not a Python thread bpfsight
 *                         reads), and its stack (callchainId, a BPFSIGHT_STACKS id; NULL: none
 *                         could be read). nsys keeps its samples in COMPOSITE_EVENTS with a
 *                         callchain per sample; ours are interned, shared with every event.
 * docs/EXPORT.md's cpu_sum query sums it as `stats -r cpu_sum` does.
 */
#include "cpu.h"
#include "export_sqlite.h"

static const char cpu_schema[] =
	"CREATE TABLE BPFSIGHT_CPU_SAMPLES (start INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" cpu INTEGER NOT NULL, kernel INTEGER NOT NULL, gil INTEGER, callchainId INTEGER);";

static const char cpu_indexes[] =
	"CREATE INDEX BPFSIGHT_CPU_SAMPLES_start ON BPFSIGHT_CPU_SAMPLES(start);"
	"CREATE INDEX BPFSIGHT_CPU_SAMPLES_globalTid ON BPFSIGHT_CPU_SAMPLES(globalTid);"
	"CREATE INDEX BPFSIGHT_CPU_SAMPLES_callchainId ON BPFSIGHT_CPU_SAMPLES(callchainId);";

static const char *const cpu_sql[] = {
	"INSERT INTO BPFSIGHT_CPU_SAMPLES VALUES (?, ?, ?, ?, ?, ?)",
};

static int cpu_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, cpu_sql, 1, st);
}

static int cpu_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	const struct bs_cpu_sample *c = (const void *)rec;
	sqlite3_stmt *q = ((struct sq_stmts *)st)->stmt[0];

	if (rec->type != BS_REC_CPU_SAMPLE || !ev)
		return 0;
	sqlite3_bind_int64(q, 1, rec->ts);
	sqlite3_bind_int64(q, 2, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(q, 3, rec->cpu);
	sqlite3_bind_int(q, 4, !!(c->flags & BS_CPU_KERNEL));
	if (c->flags & BS_CPU_PYTHON)
		sqlite3_bind_int(q, 5, !!(c->flags & BS_CPU_GIL));
	sq_bind_stack(q, 6, ev->stack);
	return sq_run(s, q);
}

const struct sqlite_family cpu_sqlite = {
	.schema = cpu_schema,
	.indexes = cpu_indexes,
	.open = cpu_open,
	.free = sq_stmts__free,
	.record = cpu_record,
};
