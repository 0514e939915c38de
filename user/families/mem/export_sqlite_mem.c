// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family's tables in the SQLite export (nsys has none for tensors: its
 * CUDA_GPU_MEMORY_USAGE_EVENTS are cudaMalloc's), one row per record, as dump shows it:
 *   BPFSIGHT_MEM_ALLOCS  allocations and frees: a free's size and allocation time from its
 *                        allocation (mem_live.h, as every view counts it), the device's live
 *                        bytes after it, the allocator's totals where its reports give them,
 *                        a GPU block's stream where the USDT probe gives it (torch 2.2+), what
 *                        an allocation counts for at its line (mem_alloc__weight)
 *   BPFSIGHT_MEM_RSS     the process's resident memory when it moved by --mem-step
 *   BPFSIGHT_MEM_GROWTH  resident memory samples (a shrink's bytes negative), with the stack
 *                        that moved it
 *   BPFSIGHT_MEM_OOM     allocations refused for want of memory
 * Memory: the prepared statements.
 */
#include <stdlib.h>
#include "export_sqlite.h"
#include "mem.h"
#include "mem_live.h"
#include "mem_walk.h"

static const char mem_schema[] =
	"CREATE TABLE BPFSIGHT_MEM_ALLOCS (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" device TEXT NOT NULL, isFree INTEGER NOT NULL, address INTEGER NOT NULL,"
	" bytes INTEGER NOT NULL, liveBytes INTEGER, allocated INTEGER, reserved INTEGER,"
	" stream INTEGER, source TEXT NOT NULL, allocTs INTEGER, callchainId INTEGER,"
	" weight REAL);"
	"CREATE TABLE BPFSIGHT_MEM_RSS (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" rss INTEGER NOT NULL, anon INTEGER NOT NULL, file INTEGER NOT NULL,"
	" shmem INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_MEM_GROWTH (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" bytes INTEGER NOT NULL, rss INTEGER NOT NULL, callchainId INTEGER);"
	"CREATE TABLE BPFSIGHT_MEM_OOM (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" device TEXT NOT NULL, bytes INTEGER NOT NULL, allocated INTEGER, reserved INTEGER,"
	" source TEXT NOT NULL, callchainId INTEGER);";

static const char mem_indexes[] =
	"CREATE INDEX BPFSIGHT_MEM_ALLOCS_ts ON BPFSIGHT_MEM_ALLOCS(ts);"
	"CREATE INDEX BPFSIGHT_MEM_ALLOCS_globalTid ON BPFSIGHT_MEM_ALLOCS(globalTid);"
	"CREATE INDEX BPFSIGHT_MEM_ALLOCS_address ON BPFSIGHT_MEM_ALLOCS(address);"
	"CREATE INDEX BPFSIGHT_MEM_RSS_ts ON BPFSIGHT_MEM_RSS(ts);";

enum mem_stmt { M_ALLOC, M_STREAM, M_RSS, M_GROW, M_OOM, M_NSTMT };

static const char *const mem_sql[M_NSTMT] = {
	[M_ALLOC] =
		"INSERT INTO BPFSIGHT_MEM_ALLOCS VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	/* The USDT probe's MEM_STREAM comes just after its block's allocation: its row. */
	[M_STREAM] =
		("UPDATE BPFSIGHT_MEM_ALLOCS SET stream = ? WHERE rowid = (SELECT max(rowid)"
		 " FROM BPFSIGHT_MEM_ALLOCS WHERE address = ? AND globalTid = ? AND isFree = 0)"),
	[M_RSS] = "INSERT INTO BPFSIGHT_MEM_RSS VALUES (?, ?, ?, ?, ?, ?)",
	[M_GROW] = "INSERT INTO BPFSIGHT_MEM_GROWTH VALUES (?, ?, ?, ?, ?)",
	[M_OOM] = "INSERT INTO BPFSIGHT_MEM_OOM VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
};

static int mem_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, mem_sql, M_NSTMT, st);
}

/* Columns 1 and 2 of every table: the record's time and thread. */
static void bind_when(sqlite3_stmt *q, const struct bs_hdr *rec)
{
	sqlite3_bind_int64(q, 1, rec->ts);
	sqlite3_bind_int64(q, 2, global_tid(rec->pid, rec->tid));
}

static int mem_alloc_row(struct sq *s, sqlite3_stmt *q, const struct bs_hdr *rec,
			 const struct event *ev, const struct trace_model *m)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	const struct mem_walk *w = mem_walk__of(m, rec);

	bind_when(q, rec);
	sq_bind_arg(q, 3, ev, "device");
	sqlite3_bind_int(q, 4, !!(r->flags & BS_MEM_FREE));
	sqlite3_bind_int64(q, 5, (__s64)r->addr);
	sqlite3_bind_int64(q, 6, (__s64)(w ? w->last_bytes : r->bytes));
	sq_bind_arg(q, 7, ev, "live");
	sq_bind_arg(q, 8, ev, "allocated");
	sq_bind_arg(q, 9, ev, "reserved");
	sqlite3_bind_null(q, 10); /* the stream: MEM_STREAM's, next */
	sq_bind_arg(q, 11, ev, "source");
	if (w && r->flags & BS_MEM_FREE && w->last_alloc_ts)
		sqlite3_bind_int64(q, 12, w->last_alloc_ts);
	else
		sqlite3_bind_null(q, 12);
	sq_bind_stack(q, 13, ev->stack); /* --stacks=mem */
	if (r->flags & BS_MEM_FREE)
		sqlite3_bind_null(q, 14);
	else
		sqlite3_bind_double(q, 14, mem_alloc__weight(r));
	return sq_run(s, q);
}

static int mem_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	struct sq_stmts *t = st;
	const struct bs_mem_rss *rss = (const void *)rec;
	sqlite3_stmt *q;

	if (!ev)
		return 0;
	switch (rec->type) {
	case BS_REC_MEM_ALLOC:
		return mem_alloc_row(s, t->stmt[M_ALLOC], rec, ev, m);
	case BS_REC_MEM_STREAM:
		q = t->stmt[M_STREAM];
		sqlite3_bind_int64(q, 1, (__s64)((const struct bs_mem_stream *)rec)->stream);
		sqlite3_bind_int64(q, 2, (__s64)((const struct bs_mem_stream *)rec)->addr);
		sqlite3_bind_int64(q, 3, global_tid(rec->pid, rec->tid));
		return sq_run(s, q);
	case BS_REC_MEM_RSS:
		q = t->stmt[M_RSS];
		bind_when(q, rec);
		sqlite3_bind_int64(q, 3, (__s64)rss->rss);
		sqlite3_bind_int64(q, 4, (__s64)rss->anon);
		sqlite3_bind_int64(q, 5, (__s64)rss->file);
		sqlite3_bind_int64(q, 6, (__s64)rss->shmem);
		return sq_run(s, q);
	case BS_REC_MEM_GROW:
	case BS_REC_MEM_SHRINK: /* a shrink's bytes negative: SUM(bytes) is the net growth */
		q = t->stmt[M_GROW];
		bind_when(q, rec);
		sqlite3_bind_int64(q, 3,
				   rec->type == BS_REC_MEM_GROW
					   ? (__s64)((const struct bs_mem_grow *)rec)->bytes
					   : -(__s64)((const struct bs_mem_grow *)rec)->bytes);
		sq_bind_arg(q, 4, ev, "rss");
		sq_bind_stack(q, 5, ev->stack);
		return sq_run(s, q);
	case BS_REC_MEM_OOM:
		q = t->stmt[M_OOM];
		bind_when(q, rec);
		sq_bind_arg(q, 3, ev, "device");
		sq_bind_arg(q, 4, ev, "bytes");
		sq_bind_arg(q, 5, ev, "allocated");
		sq_bind_arg(q, 6, ev, "reserved");
		sq_bind_arg(q, 7, ev, "source");
		sq_bind_stack(q, 8, ev->stack);
		return sq_run(s, q);
	default:
		return 0;
	}
}

const struct sqlite_family mem_sqlite = {
	.schema = mem_schema,
	.indexes = mem_indexes,
	.open = mem_open,
	.free = sq_stmts__free,
	.record = mem_record,
};
