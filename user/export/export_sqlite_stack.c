// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stacks in the SQLite export: the trace's interned stacks (STACK records), one row per stack
 * and one per frame, shaped like nsys's *_CALLCHAINS tables (id, symbol and module through
 * StringIds, stackDepth 0 = the innermost frame) but shared by every table whose rows carry a
 * stack: a row's callchainId (CUPTI_ACTIVITY_KIND_RUNTIME, OSRT_API, BPFSIGHT_NCCL,
 * BPFSIGHT_GIL_WAITS, BPFSIGHT_CPU_SAMPLES...) is a BPFSIGHT_STACKS.id. Names are written as
 * dump and stats write them (stack_format.c), so the queries of docs/EXPORT.md group them as
 * stats does.
 */
#include <errno.h>
#include "export_sqlite.h"
#include "stack_format.h"
#include "trace_model.h"

const char sq_stack_schema[] =
	"CREATE TABLE BPFSIGHT_STACKS (id INTEGER NOT NULL PRIMARY KEY,"
	" frames INTEGER NOT NULL, truncated INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_CALLCHAINS (id INTEGER NOT NULL REFERENCES BPFSIGHT_STACKS(id),"
	" stackDepth INTEGER NOT NULL, symbol INTEGER NOT NULL REFERENCES StringIds(id),"
	" module INTEGER NOT NULL REFERENCES StringIds(id), line INTEGER, address INTEGER,"
	" frameKind TEXT NOT NULL, PRIMARY KEY (id, stackDepth)) WITHOUT ROWID;";

static const char *frame_kind(__u32 kind)
{
	switch (kind) {
	case BS_FRAME_PYTHON:
		return "python";
	case BS_FRAME_NATIVE:
		return "native";
	case BS_FRAME_CUT:
		return "cut";
	default:
		return "unknown";
	}
}

int sq_stack(struct sq *s, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_stack *r = (const void *)rec;
	const struct trace_stack *st;
	sqlite3_stmt *q;
	char buf[512];
	int err = 0;

	if (rec->size < sizeof(*r) || !(st = trace_model__stack(m, r->id)) || st->id != r->id)
		return 0;
	q = s->stmt[SQ_STACK];
	sqlite3_bind_int64(q, 1, st->id);
	sqlite3_bind_int64(q, 2, st->nframes);
	sqlite3_bind_int(q, 3, !!(st->flags & BS_STACK_TRUNCATED));
	err = sq_run(s, q);
	/* A file repeats an id only when corrupt: the first definition is the model's. */
	if (err || !sqlite3_changes(s->db))
		return err;
	q = s->stmt[SQ_FRAME];
	for (__u32 i = 0; !err && i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		__u32 sym = sq_intern(s, stack_frame__func(f, m, buf, sizeof(buf)), &err);
		__u32 mod = sym ? sq_intern(s, stack_frame__file(f, m), &err) : 0;

		if (!sym || !mod)
			return err;
		sqlite3_bind_int64(q, 1, st->id);
		sqlite3_bind_int64(q, 2, i);
		sqlite3_bind_int64(q, 3, sym);
		sqlite3_bind_int64(q, 4, mod);
		if (f->kind == BS_FRAME_PYTHON)
			sqlite3_bind_int64(q, 5, f->line);
		else
			sqlite3_bind_int64(q, 6, (__s64)f->addr);
		sqlite3_bind_text(q, 7, frame_kind(f->kind), -1, SQLITE_STATIC);
		err = sq_run(s, q);
	}
	return err;
}

void sq_bind_stack(sqlite3_stmt *st, int col, const struct trace_stack *s)
{
	if (s)
		sqlite3_bind_int64(st, col, s->id);
	else
		sqlite3_bind_null(st, col);
}
