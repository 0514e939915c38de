// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * SQLite export, shaped like Nsight Systems' (`nsys export --type sqlite`) where nsys has a
 * table for the data: StringIds, ThreadNames, OSRT_API, SCHED_EVENTS,
 * CUPTI_ACTIVITY_KIND_RUNTIME (with ENUM_NSYS_EVENT_CLASS), with nsys's column names and its
 * globalTid = pid << 24 | tid, so queries written for nsys reports run on ours. What nsys has
 * no table for goes into BPFSIGHT_* tables (a CUDA call's decoded arguments, NCCL calls).
 * The GPU and NVTX tables are export_sqlite_gpu.c's, the GIL tables export_sqlite_gil.c's. docs/EXPORT.md has the schema and
 * queries that reproduce `bpfsight stats`.
 *
 * Streamed: one transaction of prepared inserts, indexes built at the end. Memory holds the
 * interned names, the set of threads seen and SQLite's page cache (SQ_CACHE_KIB), never
 * events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "export_sqlite.h"
#include "family.h"
#include "stats_math.h"
#include "string_pool.h"
#include "syscall_names.h"

/*
 * The schema. A family that lands adds its tables here, its inserts to sq_sql[] and a case to
 * sqlite__record; the gpu and nvtx families' (nsys's CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY,
 * _MEMSET, NVTX_EVENTS) are export_sqlite_gpu.c's, the gil family's (BPFSIGHT_GIL_*)
 * export_sqlite_gil.c's.
 *
 * CUPTI_ACTIVITY_KIND_RUNTIME has nsys's columns in nsys's order, then three of ours:
 * nestingLevel (bs_ucall.depth: 0 = a call the application made), id, which
 * BPFSIGHT_CUDA_ARGS.callId refers to, and cuptiOnly (1: a row from CUPTI's own record of a call
 * no cuda-family event was matched to, export_sqlite_gpu.c). correlationId is CUPTI's, set on
 * the launching calls of GPU work (export_sqlite_gpu.c).
 */
static const char sq_schema[] =
	"CREATE TABLE META (key TEXT PRIMARY KEY, value);"
	"CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id),"
	" priority INTEGER, globalTid INTEGER);"
	"CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" nestingLevel INTEGER, callchainId INTEGER);"
	"CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER, isSchedIn INTEGER NOT NULL,"
	" globalTid INTEGER, threadState INTEGER, threadBlock INTEGER);"
	"CREATE TABLE BPFSIGHT_OFFCPU (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, state INTEGER NOT NULL, blockedNs INTEGER NOT NULL,"
	" runnableNs INTEGER NOT NULL, oncpuNs INTEGER NOT NULL, wakerTid INTEGER NOT NULL,"
	" cpu INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_SYSCALL_AGG (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" nr INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), count INTEGER NOT NULL,"
	" totalNs INTEGER NOT NULL, minNs INTEGER NOT NULL, maxNs INTEGER NOT NULL,"
	" snapshotTs INTEGER NOT NULL, PRIMARY KEY (pid, tid, nr)) WITHOUT ROWID;"
	"CREATE TABLE BPFSIGHT_LOSS (ts INTEGER NOT NULL, cause TEXT NOT NULL,"
	" causeId INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_PROCESSES (pid INTEGER PRIMARY KEY, ppid INTEGER, name TEXT,"
	" cmdline TEXT, exe TEXT, uid INTEGER, startNs INTEGER);"
	"CREATE TABLE BPFSIGHT_THREADS (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, name TEXT, PRIMARY KEY (pid, tid)) WITHOUT ROWID;"
	"CREATE TABLE BPFSIGHT_PROC_EVENTS (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" kind TEXT NOT NULL, name TEXT, childPid INTEGER, childTid INTEGER, exitCode INTEGER,"
	" signal INTEGER);"
	"CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL,"
	" label TEXT);"
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES"
	" (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'),"
	" (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver'),"
	" (27, 'TRACE_PROCESS_EVENT_OS_RUNTIME', 'OS runtime libraries');"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,"
	" callchainId INTEGER, nestingLevel INTEGER NOT NULL, id INTEGER NOT NULL PRIMARY KEY,"
	" cuptiOnly INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_CUDA_ARGS (callId INTEGER NOT NULL PRIMARY KEY"
	" REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(id), kernelNameId INTEGER REFERENCES StringIds(id),"
	" gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,"
	" blockZ INTEGER, sharedBytes INTEGER, bytes INTEGER, copyKind TEXT, stream INTEGER,"
	" dst INTEGER, src INTEGER, ptr INTEGER);"
	"CREATE TABLE BPFSIGHT_NCCL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, nameId INTEGER NOT NULL REFERENCES StringIds(id),"
	" returnValue INTEGER NOT NULL, nestingLevel INTEGER NOT NULL, comm INTEGER,"
	" rank INTEGER, nranks INTEGER, count INTEGER, bytes INTEGER, datatype TEXT, op TEXT,"
	" root INTEGER, peer INTEGER, stream INTEGER, groupDepth INTEGER NOT NULL,"
	" groupNs INTEGER, uniqueIdHash TEXT);";

/* Built after the inserts: one sort per index instead of a B-tree update per row. */
static const char sq_indexes[] =
	"CREATE INDEX OSRT_API_start ON OSRT_API(start);"
	"CREATE INDEX OSRT_API_globalTid ON OSRT_API(globalTid);"
	"CREATE INDEX SCHED_EVENTS_start ON SCHED_EVENTS(start);"
	"CREATE INDEX SCHED_EVENTS_globalTid ON SCHED_EVENTS(globalTid);"
	"CREATE INDEX BPFSIGHT_OFFCPU_start ON BPFSIGHT_OFFCPU(start);"
	"CREATE INDEX BPFSIGHT_OFFCPU_globalTid ON BPFSIGHT_OFFCPU(globalTid);"
	"CREATE INDEX BPFSIGHT_PROC_EVENTS_ts ON BPFSIGHT_PROC_EVENTS(ts);"
	"CREATE INDEX BPFSIGHT_PROC_EVENTS_globalTid ON BPFSIGHT_PROC_EVENTS(globalTid);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_RUNTIME_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);"
	"CREATE INDEX CUPTI_ACTIVITY_KIND_RUNTIME_globalTid"
	" ON CUPTI_ACTIVITY_KIND_RUNTIME(globalTid);"
	"CREATE INDEX BPFSIGHT_NCCL_start ON BPFSIGHT_NCCL(start);"
	"CREATE INDEX BPFSIGHT_NCCL_globalTid ON BPFSIGHT_NCCL(globalTid);";

static const char *const sq_sql[SQ_NSTMT] = {
	[SQ_META] = "INSERT OR REPLACE INTO META VALUES (?, ?)",
	[SQ_STRING] = "INSERT INTO StringIds VALUES (?, ?)",
	[SQ_THREAD_NAME] = "INSERT INTO ThreadNames VALUES (?, NULL, ?)",
	[SQ_OSRT] = "INSERT INTO OSRT_API VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, NULL)",
	[SQ_SCHED] = "INSERT INTO SCHED_EVENTS VALUES (?, ?, ?, ?, ?, NULL)",
	[SQ_OFFCPU] = "INSERT INTO BPFSIGHT_OFFCPU VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
	/* Snapshots are cumulative: the last one per key is the one that counts. */
	[SQ_AGG] =
		"INSERT OR REPLACE INTO BPFSIGHT_SYSCALL_AGG VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[SQ_LOSS] = "INSERT INTO BPFSIGHT_LOSS VALUES (?, ?, ?, ?)",
	/* A process is snapshotted again after each exec: keep the latest. */
	[SQ_PROCESS] = "INSERT INTO BPFSIGHT_PROCESSES VALUES (?, ?, ?, ?, ?, ?, ?)"
		       " ON CONFLICT(pid) DO UPDATE SET ppid = excluded.ppid, name = excluded.name,"
		       " cmdline = excluded.cmdline, exe = excluded.exe, uid = excluded.uid,"
		       " startNs = excluded.startNs",
	[SQ_PROCESS_NAME] = "INSERT INTO BPFSIGHT_PROCESSES (pid, name) VALUES (?, ?)"
			    " ON CONFLICT(pid) DO UPDATE SET name = coalesce(excluded.name, name)",
	[SQ_THREAD] = "INSERT OR REPLACE INTO BPFSIGHT_THREADS VALUES (?, ?, ?, ?)",
	[SQ_PROC_EVENT] = "INSERT INTO BPFSIGHT_PROC_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[SQ_CUDA] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
		    " (?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, 0)",
	[SQ_CUDA_ARGS] = "INSERT INTO BPFSIGHT_CUDA_ARGS VALUES"
			 " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[SQ_NCCL] = "INSERT INTO BPFSIGHT_NCCL VALUES"
		    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

__s64 global_tid(__u32 pid, __u32 tid)
{
	return (__s64)pid << 24 | tid;
}

int sq_fail(struct sq *s, const char *what)
{
	int rc = sqlite3_errcode(s->db);

	fprintf(stderr, "bpfsight export: %s: sqlite: %s: %s\n", s->path, what,
		sqlite3_errmsg(s->db));
	if (rc == SQLITE_FULL)
		return -ENOSPC;
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	return -EIO;
}

int sq_exec(struct sq *s, const char *sql, const char *what)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(s, what);
	return 0;
}

/* Run statement I with what was bound, and make it ready for the next row. */
static int sq_step(struct sq *s, enum sq_stmt i)
{
	sqlite3_stmt *st = s->stmt[i];
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sq_fail(s, sq_sql[i]);
	return 0;
}

void sq_bind_text(sqlite3_stmt *st, int col, const char *text)
{
	if (text)
		sqlite3_bind_text(st, col, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, col);
}

/* NUL-padded comm arrays may fill all 16 bytes without a terminator. */
static void sq_bind_comm(sqlite3_stmt *st, int col, const char *comm)
{
	sqlite3_bind_text(st, col, comm, strnlen(comm, BS_COMM_LEN), SQLITE_TRANSIENT);
}

__u32 sq_intern(struct sq *s, const char *text, int *err)
{
	sqlite3_stmt *st = s->stmt[SQ_STRING];
	int is_new;
	__u32 id;

	id = string_pool__intern(s->strings, text, &is_new);
	if (!id) {
		*err = -ENOMEM;
		return 0;
	}
	if (is_new) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
		*err = sq_step(s, SQ_STRING);
		if (*err)
			return 0;
	}
	return id;
}

/* Same naming as the osrt decoder: "syscall_N" for numbers the table does not know. */
static __u32 sq_syscall_name(struct sq *s, __u32 nr, int *err)
{
	char buf[32];
	const char *name = syscall_name(nr);
	__u32 id;

	if (nr < SQ_NR_CACHE && s->nr_name[nr])
		return s->nr_name[nr];
	if (!name) {
		snprintf(buf, sizeof(buf), "syscall_%u", nr);
		name = buf;
	}
	id = sq_intern(s, name, err);
	if (id && nr < SQ_NR_CACHE)
		s->nr_name[nr] = id;
	return id;
}

static int sq_meta_text(struct sq *s, const char *key, const char *value)
{
	sqlite3_stmt *st = s->stmt[SQ_META];

	if (!value || !*value)
		return 0;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	return sq_step(s, SQ_META);
}

static int sq_meta_int(struct sq *s, const char *key, __u64 value)
{
	sqlite3_stmt *st = s->stmt[SQ_META];

	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (__s64)value);
	return sq_step(s, SQ_META);
}

static int sq_meta(struct sq *s, const struct trace_meta *m)
{
	int err = 0;

	err = err ?: sq_meta_text(s, "exporter_version", BPFSIGHT_VERSION);
	err = err ?: sq_meta_int(s, "format_version", m->version);
	err = err ?: sq_meta_text(s, "hostname", m->hostname);
	err = err ?: sq_meta_text(s, "kernel", m->kernel);
	err = err ?: sq_meta_text(s, "boot_id", m->boot_id);
	err = err ?: sq_meta_text(s, "cmdline", m->cmdline);
	err = err ?: sq_meta_text(s, "families", m->families);
	err = err ?: sq_meta_text(s, "target", m->target);
	err = err ?: sq_meta_text(s, "options", m->options);
	err = err ?: sq_meta_text(s, "recorder_version", m->tool_version);
	err = err ?: sq_meta_text(s, "clock", "CLOCK_MONOTONIC");
	err = err ?: sq_meta_int(s, "start_monotonic_ns", m->start.mono_ns);
	err = err ?: sq_meta_int(s, "start_realtime_ns", m->start.realtime_ns);
	err = err ?: sq_meta_int(s, "start_boottime_ns", m->start.boottime_ns);
	return err;
}

static void sq_finalize(struct sq *s)
{
	int i;

	for (i = 0; i < SQ_NSTMT; i++) {
		sqlite3_finalize(s->stmt[i]);
		s->stmt[i] = NULL;
	}
}

static void sq_free(struct sq *s)
{
	sq_gpu__free(s);
	sq_gil__free(s);
	sq_finalize(s);
	sqlite3_close(s->db);
	string_pool__free(s->strings);
	hmap__free(s->threads);
	hmap__free(s->agg_closed);
	free(s);
}

static void *sqlite__open(const char *out, const struct trace_meta *meta, int *err)
{
	size_t n = strlen(out);
	struct sq *s;
	char pragmas[256];
	int fd, i;

	/* A database is rewritten in place as it grows: it cannot be a gzip stream. */
	if (n >= 3 && !strcmp(out + n - 3, ".gz")) {
		fprintf(stderr,
			"bpfsight export: %s: SQLite output cannot be gzip-compressed; "
			"write a .sqlite file and compress it afterwards\n",
			out);
		*err = -EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	s->path = out;
	s->strings = string_pool__new();
	s->threads = hmap__new(1);
	s->agg_closed = hmap__new(sizeof(struct bs_syscall_agg_val));
	if (!s->strings || !s->threads || !s->agg_closed) {
		*err = -ENOMEM;
		goto err_free;
	}
	/*
	 * Create OUT ourselves (new, never through a symlink, 0600); SQLite then opens the empty
	 * file as an empty database, and O_NOFOLLOW again in case it was swapped meanwhile.
	 */
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		*err = -errno;
		goto err_free;
	}
	close(fd);
	if (sqlite3_open_v2(out, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
	    SQLITE_OK) {
		*err = s->db ? sq_fail(s, "open") : -ENOMEM;
		goto err_free;
	}
	/*
	 * OUT is new and removed by the caller on any failure: no journal and no fsync to pay
	 * for. The cache bounds memory; dirty pages beyond it are written out early.
	 */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
		 "PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -%d;"
		 "PRAGMA temp_store = FILE;",
		 SQ_CACHE_KIB);
	*err = sq_exec(s, pragmas, "settings");
	if (!*err)
		*err = sq_exec(s, "BEGIN", "begin");
	if (!*err)
		*err = sq_exec(s, sq_schema, "creating the tables");
	for (i = 0; !*err && i < SQ_NSTMT; i++)
		if (sqlite3_prepare_v3(s->db, sq_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i],
				       NULL) != SQLITE_OK)
			*err = sq_fail(s, sq_sql[i]);
	if (!*err)
		*err = sq_meta(s, meta);
	if (!*err)
		*err = sq_gpu__open(s);
	if (!*err)
		*err = sq_gil__open(s);
	if (*err)
		goto err_free;
	return s;

err_free:
	sq_free(s);
	return NULL;
}

static int sq_syscall(struct sq *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_syscall *c = (const void *)rec;
	sqlite3_stmt *st = s->stmt[SQ_OSRT];
	int err = 0;
	__u32 name;

	name = sq_syscall_name(s, c->nr, &err);
	if (!name)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + c->dur);
	sqlite3_bind_int(st, 3, SQ_OSRT_CLASS);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, c->ret);
	return sq_step(s, SQ_OSRT);
}

static int sq_syscall_agg(struct sq *s, const struct bs_hdr *rec)
{
	const struct bs_syscall_agg *a = (const void *)rec;
	sqlite3_stmt *st = s->stmt[SQ_AGG];
	int err = 0;
	__u32 name;

	struct bs_syscall_agg_val *closed, row;

	name = sq_syscall_name(s, a->nr, &err);
	if (!name)
		return err;
	/*
	 * The row is the key's closed totals (BS_AGG_FINAL: exited threads whose tid came back,
	 * evicted entries) plus its current snapshot.
	 */
	closed = hmap__get(s->agg_closed, (struct hkey){ (__u64)rec->pid << 32 | rec->tid, a->nr },
			   1);
	if (!closed)
		return -ENOMEM;
	row = *closed;
	if (a->count) {
		row.min_ns = row.count && row.min_ns < a->min_ns ? row.min_ns : a->min_ns;
		row.max_ns = row.count && row.max_ns > a->max_ns ? row.max_ns : a->max_ns;
		row.count += a->count;
		row.total_ns += a->total_ns;
	}
	if (a->flags & BS_AGG_FINAL)
		*closed = row;
	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, rec->tid);
	sqlite3_bind_int64(st, 3, a->nr);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, (__s64)row.count);
	sqlite3_bind_int64(st, 7, (__s64)row.total_ns);
	sqlite3_bind_int64(st, 8, (__s64)row.min_ns);
	sqlite3_bind_int64(st, 9, (__s64)row.max_ns);
	sqlite3_bind_int64(st, 10, rec->ts);
	return sq_step(s, SQ_AGG);
}

static int sq_sched_row(struct sq *s, __u64 ts, const __u32 *cpu, int in, __s64 gtid,
			const __u32 *state)
{
	sqlite3_stmt *st = s->stmt[SQ_SCHED];

	sqlite3_bind_int64(st, 1, ts);
	if (cpu)
		sqlite3_bind_int64(st, 2, *cpu);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int(st, 3, in);
	sqlite3_bind_int64(st, 4, gtid);
	if (state)
		sqlite3_bind_int64(st, 5, *state);
	else
		sqlite3_bind_null(st, 5);
	return sq_step(s, SQ_SCHED);
}

/*
 * One interval becomes our row plus nsys's two switch rows. The CPU the thread came back on
 * is not recorded: the switch-in row has cpu NULL. runnableNs is clamped to the interval as
 * sched_sum does, so blockedNs + runnableNs = end - start.
 */
static int sq_offcpu(struct sq *s, const struct bs_hdr *rec)
{
	const struct bs_offcpu *o = (const void *)rec;
	sqlite3_stmt *st = s->stmt[SQ_OFFCPU];
	__s64 gtid = global_tid(rec->pid, rec->tid);
	__u64 runnable = o->runnable_ns < o->dur ? o->runnable_ns : o->dur;
	int err;

	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + o->dur);
	sqlite3_bind_int64(st, 3, gtid);
	sqlite3_bind_int64(st, 4, o->state);
	sqlite3_bind_int64(st, 5, o->dur - runnable);
	sqlite3_bind_int64(st, 6, runnable);
	sqlite3_bind_int64(st, 7, o->oncpu_ns);
	sqlite3_bind_int64(st, 8, o->waker_tid);
	sqlite3_bind_int64(st, 9, rec->cpu);
	err = sq_step(s, SQ_OFFCPU);
	if (!err)
		err = sq_sched_row(s, rec->ts, &rec->cpu, 0, gtid, &o->state);
	if (!err)
		err = sq_sched_row(s, rec->ts + o->dur, NULL, 1, gtid, NULL);
	return err;
}

static int sq_loss(struct sq *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_loss *l = (const void *)rec;
	sqlite3_stmt *st = s->stmt[SQ_LOSS];

	sqlite3_bind_int64(st, 1, rec->ts);
	sq_bind_text(st, 2, ev ? ev->name : "unknown");
	sqlite3_bind_int64(st, 3, l->cause);
	sqlite3_bind_int64(st, 4, (__s64)l->count);
	return sq_step(s, SQ_LOSS);
}

static int sq_process(struct sq *s, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_process *p = (const void *)rec;
	sqlite3_stmt *st = s->stmt[SQ_PROCESS];

	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, p->ppid);
	sq_bind_comm(st, 3, p->comm);
	sq_bind_text(st, 4, p->cmdline_id ? trace_model__string(m, p->cmdline_id) : NULL);
	sq_bind_text(st, 5, p->exe_id ? trace_model__string(m, p->exe_id) : NULL);
	sqlite3_bind_int64(st, 6, p->uid);
	if (p->start_ns)
		sqlite3_bind_int64(st, 7, p->start_ns);
	else
		sqlite3_bind_null(st, 7);
	return sq_step(s, SQ_PROCESS);
}

/* fork, clone_thread, exec, exit, comm: what happened to a thread, and when. */
static int sq_proc_event(struct sq *s, const struct bs_hdr *rec, const struct event *ev)
{
	sqlite3_stmt *st = s->stmt[SQ_PROC_EVENT];
	const struct bs_fork *f = (const void *)rec;
	const struct bs_exit *x = (const void *)rec;
	int col;

	if (!ev)
		return 0;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, global_tid(rec->pid, rec->tid));
	sqlite3_bind_text(st, 3, ev->kind, -1, SQLITE_STATIC);
	sq_bind_text(st, 4, ev->name);
	for (col = 5; col <= 8; col++)
		sqlite3_bind_null(st, col);
	if (rec->type == BS_REC_FORK) {
		sqlite3_bind_int64(st, 5, f->child_pid);
		sqlite3_bind_int64(st, 6, f->child_tid);
	} else if (rec->type == BS_REC_EXIT) {
		/* task->exit_code is a wait status: (code << 8) | signal. */
		sqlite3_bind_int64(st, 7, (x->exit_code >> 8) & 0xff);
		sqlite3_bind_int64(st, 8, x->exit_code & 0x7f);
	}
	return sq_step(s, SQ_PROC_EVENT);
}

/*
 * Bind EV's argument KEY to column COL as dump shows it: numbers and handles as integers
 * (a u64 above 2^63 reads back negative: SQLite integers are signed), text as text. NULL
 * when absent. Returns whether it was there.
 */
static int sq_bind_arg(sqlite3_stmt *st, int col, const struct event *ev, const char *key)
{
	const struct event_arg *a = event__arg(ev, key);

	if (!a) {
		sqlite3_bind_null(st, col);
		return 0;
	}
	switch (a->kind) {
	case EVENT_ARG_S64:
		sqlite3_bind_int64(st, col, a->s);
		break;
	case EVENT_ARG_STR:
		sq_bind_text(st, col, a->str);
		break;
	case EVENT_ARG_DOUBLE:
		sqlite3_bind_double(st, col, a->d);
		break;
	case EVENT_ARG_DIM3:
	case EVENT_ARG_FLAGS:
		/* Lists go into columns of their own (gridX...; state text): never one value. */
		sqlite3_bind_null(st, col);
		break;
	default: /* U64, HEX, BOOL */
		sqlite3_bind_int64(st, col, (__s64)a->u);
		break;
	}
	return 1;
}

static __s64 sq_arg_int(const struct event *ev, const char *key, __s64 dflt)
{
	const struct event_arg *a = event__arg(ev, key);

	if (!a || a->kind == EVENT_ARG_STR)
		return dflt;
	return a->kind == EVENT_ARG_S64 ? a->s : (__s64)a->u;
}

/* nsys's class of a CUDA call: the driver API is cu*, the runtime cuda* and __cuda*. */
static int sq_cuda_class(const char *name)
{
	return !strncmp(name, "cu", 2) && strncmp(name, "cuda", 4) ? SQ_CUDA_DRIVER_CLASS
								   : SQ_CUDA_RUNTIME_CLASS;
}

/*
 * The arguments people filter and group by: the launched function (by name, through
 * StringIds), launch shape, sizes, copy direction, stream and pointers. Only calls that have
 * one of them get a row.
 */
static int sq_cuda_args(struct sq *s, const struct event *ev, __s64 call)
{
	static const char *const cols[] = { "grid_x",  "grid_y",  "grid_z",	  "block_x",
					    "block_y", "block_z", "shared_bytes", "bytes",
					    "kind",    "stream",  "dst",	  "src",
					    "ptr" };
	sqlite3_stmt *st = s->stmt[SQ_CUDA_ARGS];
	const struct event_arg *fn = event__arg(ev, "kernel");
	int any = 0, err = 0;
	__u32 id;

	if (!fn)
		fn = event__arg(ev, "func");
	sqlite3_bind_int64(st, 1, call);
	if (fn && fn->kind == EVENT_ARG_STR) {
		id = sq_intern(s, fn->str, &err);
		if (!id)
			return err;
		sqlite3_bind_int64(st, 2, id);
		any = 1;
	} else {
		sqlite3_bind_null(st, 2);
	}
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		any |= sq_bind_arg(st, 3 + (int)i, ev, cols[i]);
	return any ? sq_step(s, SQ_CUDA_ARGS) : 0;
}

/* One CUDA API call: nsys's row, then its arguments. */
static int sq_cuda(struct sq *s, const struct bs_hdr *rec, const struct event *ev)
{
	sqlite3_stmt *st = s->stmt[SQ_CUDA];
	int err = 0;
	__u32 name;

	if (!ev || !ev->name)
		return 0;
	name = sq_intern(s, ev->name, &err);
	if (!name)
		return err;
	sqlite3_bind_int64(st, 1, ev->ts);
	sqlite3_bind_int64(st, 2, ev->ts + ev->dur);
	sqlite3_bind_int(st, 3, sq_cuda_class(ev->name));
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, sq_arg_int(ev, "ret", 0));
	sqlite3_bind_int64(st, 7, sq_arg_int(ev, "depth", 0));
	sqlite3_bind_int64(st, 8, ++s->cuda_calls);
	err = sq_step(s, SQ_CUDA);
	return err ? err : sq_cuda_args(s, ev, s->cuda_calls);
}

/* One NCCL API call, with what dump shows: the communicator's rank joined by the decoder. */
static int sq_nccl(struct sq *s, const struct bs_hdr *rec, const struct event *ev)
{
	static const char *const cols[] = { "comm",	"rank", "nranks", "count", "bytes",
					    "datatype", "op",	"root",	  "peer",  "stream" };
	sqlite3_stmt *st = s->stmt[SQ_NCCL];
	int err = 0;
	__u32 name;

	if (!ev || !ev->name)
		return 0;
	name = sq_intern(s, ev->name, &err);
	if (!name)
		return err;
	sqlite3_bind_int64(st, 1, ev->ts);
	sqlite3_bind_int64(st, 2, ev->ts + ev->dur);
	sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 4, name);
	sqlite3_bind_int64(st, 5, sq_arg_int(ev, "ret", 0));
	sqlite3_bind_int64(st, 6, sq_arg_int(ev, "depth", 0));
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		sq_bind_arg(st, 7 + (int)i, ev, cols[i]);
	sqlite3_bind_int64(st, 17, sq_arg_int(ev, "group_depth", 0));
	sq_bind_arg(st, 18, ev, "group_ns");
	sq_bind_arg(st, 19, ev, "unique_id_hash");
	return sq_step(s, SQ_NCCL);
}

static int sqlite__record(void *st, const struct bs_hdr *rec, const struct event *ev,
			  const struct trace_model *m)
{
	const struct rec_decoder *dec = family__decoder(rec->type);
	struct sq *s = st;
	int err;

	/* The walk hands over records too short for their type; never read past one. */
	if (!dec || rec->size < dec->min_size)
		return 0;
	/* pid 0 / tid 0: records of the recorder itself (strings, loss), not a thread. */
	if ((rec->pid || rec->tid) &&
	    !hmap__get(s->threads, (struct hkey){ rec->pid, rec->tid }, 1))
		return -ENOMEM;
	/* The gil family's rows, and the threads it may list (THREAD, FORK). */
	err = sq_gil__record(s, rec, m);
	if (err)
		return err;

	switch (rec->type) {
	case BS_REC_SYSCALL:
		return sq_syscall(s, rec, ev);
	case BS_REC_SYSCALL_AGG:
		return sq_syscall_agg(s, rec);
	case BS_REC_OFFCPU:
		return sq_offcpu(s, rec);
	case BS_REC_LOSS:
		return sq_loss(s, rec, ev);
	case BS_REC_PROCESS:
		return sq_process(s, rec, m);
	case BS_REC_FORK:
	case BS_REC_EXEC:
	case BS_REC_EXIT:
	case BS_REC_COMM:
		return sq_proc_event(s, rec, ev);
	case BS_REC_CUDA_CALL:
		return sq_cuda(s, rec, ev);
	case BS_REC_NCCL_CALL:
		return sq_nccl(s, rec, ev);
	case BS_REC_GPU_KERNEL:
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
	case BS_REC_GPU_API:
	case BS_REC_NVTX_RANGE:
	case BS_REC_NVTX_MARK:
	case BS_REC_NVTX_NAME:
		return sq_gpu__record(s, rec, ev, m);
	default:
		/* STRING and THREAD feed the model; names are written at the end. */
		return 0;
	}
}

/* Names as the model knows them at the end, the way stats names its rows. */
static int sq_names(struct sq *s, const struct trace_model *m)
{
	sqlite3_stmt *st;
	const char *name;
	struct hkey key;
	size_t it = 0;
	__u32 pid, tid, id;
	int err = 0;

	while (!err && hmap__next(s->threads, &it, &key)) {
		pid = (__u32)key.a;
		tid = (__u32)key.b;
		name = trace_model__thread_name(m, tid);
		st = s->stmt[SQ_THREAD];
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, tid);
		sqlite3_bind_int64(st, 3, global_tid(pid, tid));
		sq_bind_text(st, 4, name);
		err = sq_step(s, SQ_THREAD);
		if (!err && name) {
			id = sq_intern(s, name, &err);
			st = s->stmt[SQ_THREAD_NAME];
			sqlite3_bind_int64(st, 1, id);
			sqlite3_bind_int64(st, 2, global_tid(pid, tid));
			if (id)
				err = sq_step(s, SQ_THREAD_NAME);
		}
		if (!err && pid == tid) {
			st = s->stmt[SQ_PROCESS_NAME];
			sqlite3_bind_int64(st, 1, pid);
			sq_bind_text(st, 2, trace_model__process_name(m, pid));
			err = sq_step(s, SQ_PROCESS_NAME);
		}
	}
	return err;
}

static int sq_status(struct sq *s, const struct trace_status *t)
{
	int err = 0;

	err = err ?: sq_meta_int(s, "records", t->records);
	err = err ?: sq_meta_int(s, "chunks", t->chunks);
	err = err ?: sq_meta_int(s, "corrupt_chunks", t->corrupt_chunks);
	err = err ?: sq_meta_int(s, "clean_close", !!t->clean_close);
	err = err ?: sq_meta_int(s, "truncated", !!t->truncated);
	err = err ?: sq_meta_int(s, "first_ts", t->first_ts);
	err = err ?: sq_meta_int(s, "last_ts", t->last_ts);
	if (t->has_end) {
		err = err ?: sq_meta_int(s, "end_monotonic_ns", t->end.mono_ns);
		err = err ?: sq_meta_int(s, "end_realtime_ns", t->end.realtime_ns);
		err = err ?: sq_meta_int(s, "end_boottime_ns", t->end.boottime_ns);
	}
	return err;
}

static int sqlite__finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct sq *s = st;
	int err;

	err = sq_names(s, m);
	if (!err)
		err = sq_status(s, status);
	if (!err)
		err = sq_exec(s, sq_indexes, "creating the indexes");
	if (!err)
		err = sq_gpu__finish(s);
	if (!err)
		err = sq_gil__finish(s, m);
	if (!err)
		err = sq_exec(s, "COMMIT", "commit");
	if (!err) {
		/* Close here, not in sq_free, to hear about a failed final write. */
		sq_gpu__free(s);
		sq_gil__free(s);
		sq_finalize(s);
		if (sqlite3_close(s->db) == SQLITE_OK)
			s->db = NULL;
		else
			err = sq_fail(s, "close");
	}
	sq_free(s);
	return err;
}

static void sqlite__abort(void *st)
{
	if (st)
		sq_free(st);
}

const struct exporter export_sqlite = {
	.format = "sqlite",
	.desc = "SQLite database shaped like Nsight Systems' export",
	.open = sqlite__open,
	.record = sqlite__record,
	.finish = sqlite__finish,
	.abort = sqlite__abort,
};
