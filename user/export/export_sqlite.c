// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * SQLite export, shaped like Nsight Systems' (`nsys export --type sqlite`) where nsys has a
 * table for the data (StringIds, ThreadNames, OSRT_API, SCHED_EVENTS,
 * CUPTI_ACTIVITY_KIND_RUNTIME, ...), with nsys's column names and its globalTid = pid << 24 |
 * tid, so queries written for nsys reports run on ours. What nsys has no table for goes into
 * BPFSIGHT_* tables. docs/EXPORT.md has the schema and queries that reproduce `bpfsight stats`.
 *
 * Nothing here knows a family: this file makes the tables every trace has (META, StringIds,
 * the threads and their names, the model's ENUM_NSYS_EVENT_CLASS, the stacks), and each family
 * declares its own in the export model (export_model.h), whose rows export_sqlite_model.c
 * writes.
 *
 * Streamed: one transaction of prepared inserts, indexes built at the end. Memory holds the
 * interned names, the set of threads seen, what the families' hooks keep and SQLite's page
 * cache (SQ_CACHE_KIB), never events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "bpfsight_version.h"
#include "export_sqlite.h"
#include "family.h"
#include "hmap.h"
#include "string_pool.h"
#include "msg.h"

/* The tables of every trace; ENUM_NSYS_EVENT_CLASS gets its rows from the families. */
static const char sq_schema[] =
	"CREATE TABLE META (key TEXT PRIMARY KEY, value);"
	"CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id),"
	" priority INTEGER, globalTid INTEGER);"
	"CREATE TABLE BPFSIGHT_THREADS (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, name TEXT, PRIMARY KEY (pid, tid)) WITHOUT ROWID;";

/* The model's tables every trace has (export_model.h), after those. */
static const struct ex_table *const sq_model_tables[] = { &ex_event_classes, NULL };

static const char *const sq_sql[SQ_NSTMT] = {
	[SQ_META] = "INSERT OR REPLACE INTO META VALUES (?, ?)",
	[SQ_STRING] = "INSERT INTO StringIds VALUES (?, ?)",
	[SQ_THREAD_NAME] = "INSERT INTO ThreadNames VALUES (?, NULL, ?)",
	[SQ_THREAD] = "INSERT OR REPLACE INTO BPFSIGHT_THREADS VALUES (?, ?, ?, ?)",
	[SQ_STACK] = "INSERT OR IGNORE INTO BPFSIGHT_STACKS VALUES (?, ?, ?)",
	[SQ_FRAME] = "INSERT INTO BPFSIGHT_CALLCHAINS VALUES (?, ?, ?, ?, ?, ?, ?)",
};

int sq_fail(struct sq *s, const char *what)
{
	int rc = sqlite3_errcode(s->db);

	pr_err("%s: sqlite: %s: %s\n", s->path, what, sqlite3_errmsg(s->db));
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

int sq_run(struct sq *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return sq_fail(s, sqlite3_sql(st));
	return 0;
}

/* Run statement I of the export's own. */
static int sq_step(struct sq *s, enum sq_stmt i)
{
	return sq_run(s, s->stmt[i]);
}

int sq_prepare(struct sq *s, const char *const *sql, sqlite3_stmt **st, int n)
{
	for (int i = 0; i < n; i++)
		st[i] = NULL;
	for (int i = 0; i < n; i++)
		if (sqlite3_prepare_v3(s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i],
				       NULL) != SQLITE_OK)
			return sq_fail(s, sql[i]);
	return 0;
}

void sq_finalize(sqlite3_stmt **st, int n)
{
	for (int i = 0; i < n; i++) {
		sqlite3_finalize(st[i]);
		st[i] = NULL;
	}
}

int sq_next_thread(struct sq *s, size_t *it, __u32 *pid, __u32 *tid)
{
	struct hkey key;

	if (!hmap__next(s->threads, it, &key))
		return 0;
	*pid = (__u32)key.a;
	*tid = (__u32)key.b;
	return 1;
}

void sq_bind_text(sqlite3_stmt *st, int col, const char *text)
{
	if (text)
		sqlite3_bind_text(st, col, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, col);
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

/* The families' states and every statement, before the database closes. */
static void sq_release(struct sq *s)
{
	ex_sink__fini(&s->sink);
	sq_model__free(s);
	sq_finalize(s->stmt, SQ_NSTMT);
}

static void sq_free(struct sq *s)
{
	sq_release(s);
	sqlite3_close(s->db);
	string_pool__free(s->strings);
	hmap__free(s->threads);
	free(s);
}

/* Family I's tables, then its state. */
static int sq_family_open(struct sq *s, int i)
{
	const struct family_export *x = families[i]->export;

	return x ? sq_tables__create(s, x->tables) ?: ex_sink__open_one(&s->sink, i) : 0;
}

static void *sqlite__open(const char *out, const struct trace_meta *meta,
			  const struct export_opts *opts, int *err)
{
	size_t n = strlen(out);
	struct sq *s;
	char pragmas[256];
	int fd, i;

	/* A database is rewritten in place as it grows: it cannot be a gzip stream. */
	if (n >= 3 && !strcmp(out + n - 3, ".gz")) {
		pr_err("%s: SQLite output cannot be gzip-compressed; "
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
	if (ex_sink__init(&s->sink, &sq_sink_ops, meta, EX_TABLES) || sq_model__init(s)) {
		*err = -ENOMEM;
		goto err_free;
	}
	s->nfam = s->sink.nfam;
	if (!s->strings || !s->threads) {
		*err = -ENOMEM;
		goto err_free;
	}
	/*
	 * Create OUT ourselves (new, never through a symlink, 0600); SQLite then opens the empty
	 * file as an empty database, and O_NOFOLLOW again in case it was swapped meanwhile.
	 */
	fd = export__create(out);
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
		*err = sq_exec(s, sq_schema, "creating the tables")
			       ?: sq_tables__create(s, sq_model_tables)
			       ?: sq_exec(s, sq_stack_schema, "creating the stack tables");
	if (!*err)
		*err = sq_prepare(s, sq_sql, s->stmt, SQ_NSTMT);
	if (!*err)
		*err = sq_meta(s, meta);
	for (i = 0; !*err && i < s->nfam; i++)
		*err = sq_family_open(s, i);
	if (*err)
		goto err_free;
	return s;

err_free:
	sq_free(s);
	return NULL;
}

static int sqlite__record(void *st, const struct bs_hdr *rec, const struct event *ev,
			  const struct trace_model *m)
{
	const struct rec_decoder *dec;
	struct sq *s = st;
	int err = 0, fam;

	if (rec->type == BS_REC_STACK)
		return sq_stack(s, rec, m);
	dec = family__decoder_at(rec->type, &fam);
	/* The walk hands over records too short for their type; never read past one. */
	if (!dec || rec->size < dec->min_size)
		return 0;
	/* pid 0 / tid 0: records of the recorder itself (strings, loss), not a thread. */
	if ((rec->pid || rec->tid) &&
	    !hmap__get(s->threads, (struct hkey){ rec->pid, rec->tid }, 1))
		return -ENOMEM;
	s->sink.model = m;
	err = ex_sink__observe(&s->sink, rec);
	if (!err)
		err = ex_sink__record(&s->sink, fam, rec, ev);
	return err < 0 ? err : 0;
}

/* Names as the model knows them at the end, the way stats names its rows. */
static int sq_names(struct sq *s, const struct trace_model *m)
{
	sqlite3_stmt *st;
	const char *name;
	size_t it = 0;
	__u32 pid, tid, id;
	int err = 0;

	while (!err && sq_next_thread(s, &it, &pid, &tid)) {
		name = trace_model__thread_name(m, tid);
		st = s->stmt[SQ_THREAD];
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, tid);
		sqlite3_bind_int64(st, 3, ex_gtid(pid, tid));
		sq_bind_text(st, 4, name);
		err = sq_step(s, SQ_THREAD);
		if (!err && name) {
			id = sq_intern(s, name, &err);
			st = s->stmt[SQ_THREAD_NAME];
			sqlite3_bind_int64(st, 1, id);
			sqlite3_bind_int64(st, 2, ex_gtid(pid, tid));
			if (id)
				err = sq_step(s, SQ_THREAD_NAME);
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

	s->sink.model = m;
	err = sq_names(s, m);
	if (!err)
		err = sq_status(s, status);
	for (int i = 0; !err && i < s->nfam; i++)
		if (families[i]->export)
			err = sq_tables__index(s, families[i]->export->tables);
	/* Last registered first, as teardown goes (the GPU's links before the GIL's rows). */
	for (int i = s->nfam - 1; !err && i >= 0; i--)
		err = ex_sink__finish_one(&s->sink, i);
	if (!err)
		err = sq_exec(s, "COMMIT", "commit");
	if (!err) {
		/* Close here, not in sq_free, to hear about a failed final write. */
		sq_release(s);
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
	.suffix = ".sqlite",
	.open = sqlite__open,
	.record = sqlite__record,
	.finish = sqlite__finish,
	.abort = sqlite__abort,
};
