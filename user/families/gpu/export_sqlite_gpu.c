// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's tables in the SQLite export, nsys's: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and
 * _MEMSET with nsys's columns in nsys's order (then a few of ours), and the enum tables their
 * numbers refer to (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND, nsys's values: its memory kinds
 * are CUPTI's minus one, unknown last).
 *
 * What CUPTI does not tell the shim is NULL, even where nsys declares NOT NULL (local memory,
 * grid id, cache config). Ours at the end of each GPU table: globalTid (the launching thread),
 * apiStart (its call's entry, the cuda event or CUPTI record the GPU work is linked to) and
 * graphId; on copies, async.
 *
 * The launching call's CUPTI_ACTIVITY_KIND_RUNTIME row gets CUPTI's correlationId, as in nsys,
 * so RUNTIME joins KERNEL on it. The call's row is written before its GPU work is read, so
 * the links (thread, call entry, correlation id) go to a temporary table and one UPDATE sets
 * them at the end, with the indexes built. A CUPTI API record no cuda event was matched to
 * (-t gpu without cuda) becomes a RUNTIME row of its own, cuptiOnly = 1.
 *
 * Memory: the prepared statements; the links and rows live in the database (its page cache is
 * bounded: SQ_CACHE_KIB).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_sqlite.h"
#include "gpu_decode.h"
#include "gpu.h"

static const char gpu_schema[] =
	"CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT,"
	" label TEXT);"
	"INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES"
	" (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),"
	" (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'),"
	" (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'), (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'),"
	" (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'),"
	" (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'),"
	" (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'),"
	" (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');"
	"CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_CUDA_MEM_KIND VALUES"
	" (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),"
	" (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),"
	" (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'),"
	" (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),"
	" (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),"
	" (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'),"
	" (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" demangledName INTEGER NOT NULL REFERENCES StringIds(id),"
	" shortName INTEGER NOT NULL REFERENCES StringIds(id), mangledName INTEGER,"
	" launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,"
	" gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,"
	" blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,"
	" staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,"
	" localMemoryPerThread INTEGER, localMemoryTotal INTEGER, gridId INTEGER,"
	" sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER,"
	" globalTid INTEGER, apiStart INTEGER, graphId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL REFERENCES ENUM_CUDA_MEMCPY_OPER(id),"
	" deprecatedSrcId INTEGER, srcKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id),"
	" dstKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id), srcDeviceId INTEGER,"
	" srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,"
	" graphNodeId INTEGER, virtualAddress INTEGER, globalTid INTEGER, apiStart INTEGER,"
	" graphId INTEGER, async INTEGER NOT NULL);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,"
	" streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER,"
	" memKind INTEGER REFERENCES ENUM_CUDA_MEM_KIND(id), globalTid INTEGER, apiStart INTEGER,"
	" graphId INTEGER);"
	"CREATE TEMP TABLE gpu_link (globalTid INTEGER NOT NULL, start INTEGER NOT NULL,"
	" correlationId INTEGER NOT NULL, PRIMARY KEY (globalTid, start)) WITHOUT ROWID;";

static const char gpu_indexes[] =
	"CREATE INDEX CUPTI_ACTIVITY_KIND_KERNEL_start ON CUPTI_ACTIVITY_KIND_KERNEL(start);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_KERNEL_stream"
	" ON CUPTI_ACTIVITY_KIND_KERNEL(globalPid, deviceId, streamId);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_KERNEL_correlationId"
	" ON CUPTI_ACTIVITY_KIND_KERNEL(globalPid, correlationId);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_MEMCPY_start ON CUPTI_ACTIVITY_KIND_MEMCPY(start);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_MEMCPY_stream"
	" ON CUPTI_ACTIVITY_KIND_MEMCPY(globalPid, deviceId, streamId);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_MEMSET_start ON CUPTI_ACTIVITY_KIND_MEMSET(start);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_MEMSET_stream"
	" ON CUPTI_ACTIVITY_KIND_MEMSET(globalPid, deviceId, streamId);";

/* The links, now that RUNTIME has its indexes (the cuda family's, built before any finish). */
static const char gpu_links[] =
	"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME AS r SET correlationId = l.correlationId"
	" FROM gpu_link AS l WHERE r.globalTid = l.globalTid AND r.start = l.start"
	" AND r.cuptiOnly = 0;"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_RUNTIME_correlationId"
	" ON CUPTI_ACTIVITY_KIND_RUNTIME(correlationId);"
	"DROP TABLE gpu_link;";

enum gpu_stmt { G_KERNEL, G_MEMCPY, G_MEMSET, G_LINK, G_API, G_NSTMT };

static const char *const gpu_sql[G_NSTMT] = {
	[G_KERNEL] = "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?,"
		     " ?, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?,"
		     " NULL, ?, ?, ?)",
	[G_MEMCPY] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?,"
		     " ?, NULL, ?, ?, ?, NULL, ?, NULL, NULL, ?, NULL, ?, ?, ?, ?)",
	[G_MEMSET] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?,"
		     " ?, ?, ?, ?, ?, ?)",
	/* A kernel of a graph launch shares its call, and its correlation id, with the others. */
	[G_LINK] = "INSERT OR IGNORE INTO gpu_link VALUES (?, ?, ?)",
	/* id NULL: the next of the table's, shared with the cuda family's rows. */
	[G_API] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
		  " (?, ?, ?, ?, ?, ?, ?, NULL, 0, NULL, 1)",
};

static int gpu_step(struct sq *s, struct sq_stmts *g, enum gpu_stmt i)
{
	return sq_run(s, g->stmt[i]);
}

static int gpu_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, gpu_sql, G_NSTMT, st);
}

static int gpu_finish(struct sq *s, void *st, const struct trace_model *m)
{
	return sq_exec(s, gpu_links, "linking launches to their GPU work");
}

static void bind_u64_or_null(sqlite3_stmt *st, int col, int have, __u64 v)
{
	if (have)
		sqlite3_bind_int64(st, col, (__s64)v);
	else
		sqlite3_bind_null(st, col);
}

/* nsys's ENUM_CUDA_MEM_KIND of a CUpti_ActivityMemoryKind: one less, unknown (0) last. */
static int nsys_mem_kind(__u32 k)
{
	return k >= 1 && k <= 7 ? (int)k - 1 : 7;
}

/*
 * The columns every GPU table starts with (start ... globalPid, skipping greenContextId), and
 * ours it ends with (globalTid, apiStart, graphId) at END_COL; the link of a cuda-matched
 * launch. Returns the next column after globalPid.
 */
static int bind_gpu_common(sqlite3_stmt *st, const struct gpu_op *op, int end_col, __u32 graph_id)
{
	sqlite3_bind_int64(st, 1, op->ts);
	sqlite3_bind_int64(st, 2, op->ts + op->dur);
	sqlite3_bind_int64(st, 3, op->device);
	sqlite3_bind_int64(st, 4, op->context);
	sqlite3_bind_int64(st, 5, op->stream);
	sqlite3_bind_int64(st, 6, op->correlation);
	sqlite3_bind_int64(st, 7, global_tid(op->pid, 0));
	bind_u64_or_null(st, end_col, op->tid, global_tid(op->pid, op->tid));
	bind_u64_or_null(st, end_col + 1, op->call_ts, op->call_ts);
	bind_u64_or_null(st, end_col + 2, op->flags & BS_GPU_GRAPH, graph_id);
	return 8;
}

static int gpu_link(struct sq *s, struct sq_stmts *g, __u32 pid, __u32 tid, __u64 call_ts,
		    __u32 correlation)
{
	sqlite3_stmt *st = g->stmt[G_LINK];

	sqlite3_bind_int64(st, 1, global_tid(pid, tid));
	sqlite3_bind_int64(st, 2, call_ts);
	sqlite3_bind_int64(st, 3, correlation);
	return gpu_step(s, g, G_LINK);
}

/*
 * nsys's shortName: the function's own name, without return type, scope, template arguments or
 * parameters ("void ns::gemm<float, 4>(float*)" -> "gemm"). Into BUF.
 */
static const char *short_name(const char *name, char *buf, size_t len)
{
	const char *end = name, *start;
	int depth = 0;
	size_t n;

	for (; *end && !(*end == '(' && !depth); end++)
		depth += *end == '<' ? 1 : *end == '>' ? -1 : 0;
	/* Drop trailing template arguments, then stop at the scope or the return type. */
	depth = 0;
	while (end > name && end[-1] == '>') {
		do {
			end--;
			depth += *end == '>' ? 1 : *end == '<' ? -1 : 0;
		} while (end > name && depth);
	}
	for (start = end; start > name; start--) {
		depth += start[-1] == '>' ? 1 : start[-1] == '<' ? -1 : 0;
		if (!depth && (start[-1] == ' ' || start[-1] == ':'))
			break;
	}
	n = end - start;
	if (!n || n >= len)
		return name;
	memcpy(buf, start, n);
	buf[n] = 0;
	return buf;
}

static int gpu_kernel(struct sq *s, struct sq_stmts *g, const struct bs_hdr *rec,
		      const struct event *ev, const struct gpu_op *op)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	sqlite3_stmt *st = g->stmt[G_KERNEL];
	__u32 name, shrt;
	char buf[256];
	int err = 0, c;

	name = sq_intern(s, ev->name, &err);
	shrt = name ? sq_intern(s, short_name(ev->name, buf, sizeof(buf)), &err) : 0;
	if (!shrt)
		return err;
	c = bind_gpu_common(st, op, 20, k->graph_id);
	sqlite3_bind_int64(st, c++, name);
	sqlite3_bind_int64(st, c++, shrt);
	sqlite3_bind_int64(st, c++, k->registers);
	for (int d = 0; d < 3; d++)
		sqlite3_bind_int64(st, c + d, k->grid[d]);
	for (int d = 0; d < 3; d++)
		sqlite3_bind_int64(st, c + 3 + d, k->block[d]);
	c += 6;
	sqlite3_bind_int64(st, c++, k->shmem_static);
	sqlite3_bind_int64(st, c++, k->shmem_dynamic);
	bind_u64_or_null(st, c, k->flags & BS_GPU_GRAPH, k->graph_node_id);
	return gpu_step(s, g, G_KERNEL);
}

static int gpu_memcpy(struct sq *s, struct sq_stmts *g, const struct bs_hdr *rec,
		      const struct gpu_op *op)
{
	const struct bs_gpu_memcpy *m = (const void *)rec;
	sqlite3_stmt *st = g->stmt[G_MEMCPY];
	int c = bind_gpu_common(st, op, 15, m->graph_id);

	sqlite3_bind_int64(st, c++, (__s64)m->bytes);
	/* CUPTI's kinds stop at 10; others are Unknown, as stats names them. */
	sqlite3_bind_int64(st, c++, m->copy_kind <= 10 ? m->copy_kind : 0);
	sqlite3_bind_int64(st, c++, nsys_mem_kind(m->src_kind));
	sqlite3_bind_int64(st, c++, nsys_mem_kind(m->dst_kind));
	sqlite3_bind_int64(st, c++, m->src_device);
	sqlite3_bind_int64(st, c++, m->dst_device);
	bind_u64_or_null(st, c, m->flags & BS_GPU_GRAPH, m->graph_node_id);
	sqlite3_bind_int64(st, 18, m->async);
	return gpu_step(s, g, G_MEMCPY);
}

static int gpu_memset(struct sq *s, struct sq_stmts *g, const struct bs_hdr *rec,
		      const struct gpu_op *op)
{
	const struct bs_gpu_memset *m = (const void *)rec;
	sqlite3_stmt *st = g->stmt[G_MEMSET];
	int c = bind_gpu_common(st, op, 12, m->graph_id);

	sqlite3_bind_int64(st, c++, m->value);
	sqlite3_bind_int64(st, c++, (__s64)m->bytes);
	bind_u64_or_null(st, c++, m->flags & BS_GPU_GRAPH, m->graph_node_id);
	sqlite3_bind_int64(st, c, nsys_mem_kind(m->mem_kind));
	return gpu_step(s, g, G_MEMSET);
}

/* CUPTI's record of a launching call: a link to its cuda event's row, or a row of its own. */
static int gpu_api(struct sq *s, struct sq_stmts *g, const struct bs_hdr *rec,
		   const struct event *ev)
{
	const struct bs_gpu_api *a = (const void *)rec;
	sqlite3_stmt *st = g->stmt[G_API];
	int err = 0;
	__u32 name;

	if (a->flags & BS_GPU_CALL_CUDA)
		return a->call_ts ? gpu_link(s, g, rec->pid, rec->tid, a->call_ts, a->correlation)
				  : 0;
	name = sq_intern(s, ev->name, &err);
	if (!name)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + a->dur);
	sqlite3_bind_int(st, 3, a->domain == 1 ? SQ_CUDA_DRIVER_CLASS : SQ_CUDA_RUNTIME_CLASS);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, a->correlation);
	sqlite3_bind_int64(st, 6, name);
	sqlite3_bind_int64(st, 7, (__s32)a->ret);
	return gpu_step(s, g, G_API);
}

static int gpu_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	struct sq_stmts *g = st;
	struct gpu_op op;
	int err;

	if (!ev)
		return 0;
	if (rec->type == BS_REC_GPU_API)
		return gpu_api(s, g, rec, ev);
	if (!gpu_op__read(rec, &op))
		return 0;
	if (op.type == BS_REC_GPU_KERNEL)
		err = gpu_kernel(s, g, rec, ev, &op);
	else if (op.type == BS_REC_GPU_MEMCPY)
		err = gpu_memcpy(s, g, rec, &op);
	else
		err = gpu_memset(s, g, rec, &op);
	if (!err && op.flags & BS_GPU_CALL_CUDA && op.call_ts)
		err = gpu_link(s, g, op.pid, op.tid, op.call_ts, op.correlation);
	return err;
}

const struct sqlite_family gpu_sqlite = {
	.schema = gpu_schema,
	.indexes = gpu_indexes,
	.open = gpu_open,
	.free = sq_stmts__free,
	.record = gpu_record,
	.finish = gpu_finish,
};
