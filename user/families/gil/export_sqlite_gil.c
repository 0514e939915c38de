// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family's tables in the SQLite export (nsys has none for the GIL), shaped so that the
 * queries of docs/EXPORT.md reproduce `stats -r gil_sum,gil_blocked_by,gil_procs` exactly:
 *   BPFSIGHT_GIL_WAITS        one row per wait record (at or above the threshold)
 *                             (--stacks=gil: callchainId the waiter's stack, holderCallchainId
 *                             the holder's in its first round)
 *   BPFSIGHT_GIL_HOLDER_ROUNDS --stacks=gil: one row per round of a wait, the holder's stack
 *   BPFSIGHT_GIL_HOLDER_SAMPLES --stacks=gil: one row per timer sample of a holder others
 *                             waited for, its stack (with the rounds: gil_stacks' holders)
 *   BPFSIGHT_GIL_HOLDS        one row per hold record (--gil-mode=full)
 *   BPFSIGHT_GIL_THREADS      one row per thread gil_sum lists (every thread of a python process
 *                             and any thread with GIL data): the last in-kernel aggregate of
 *                             every wait and hold, NULL where none came
 *   BPFSIGHT_GIL_SHORT_WAITS  its histogram of the waits under the threshold, a row per bucket
 *   BPFSIGHT_GIL_BLAME        per (waiter, holder): the last in-kernel snapshot
 *   BPFSIGHT_GIL_PROCESSES    per python process: how it was measured (its last record)
 *
 * Aggregates and blame are cumulative snapshots: INSERT OR REPLACE keeps the last per key.
 * Which threads gil_sum lists is only known at the end (a thread created before its process
 * was found to be python), so the thread rows without an aggregate are written then.
 *
 * Memory: the prepared statements, a byte per thread seen and per python process; the rows
 * live in the database (its page cache is bounded: SQ_CACHE_KIB).
 */
#include <errno.h>
#include <stdlib.h>
#include "export_sqlite.h"
#include "gil.h"
#include "hmap.h"
#include "trace_model.h"

static const char gil_schema[] =
	"CREATE TABLE BPFSIGHT_GIL_WAITS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, holderGlobalTid INTEGER, rounds INTEGER NOT NULL,"
	" flags INTEGER NOT NULL, callchainId INTEGER, holderCallchainId INTEGER);"
	"CREATE TABLE BPFSIGHT_GIL_HOLDER_ROUNDS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, holderGlobalTid INTEGER, callchainId INTEGER,"
	" coveredNs INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_GIL_HOLDER_SAMPLES (ts INTEGER NOT NULL, globalTid INTEGER NOT NULL,"
	" waiters INTEGER NOT NULL, periodNs INTEGER NOT NULL, weightNs INTEGER NOT NULL,"
	" callchainId INTEGER);"
	"CREATE TABLE BPFSIGHT_GIL_HOLDS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL);"
	"CREATE TABLE BPFSIGHT_GIL_THREADS (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, name TEXT, waitCount INTEGER, waitTotalNs INTEGER,"
	" waitMaxNs INTEGER, holdCount INTEGER, holdTotalNs INTEGER, holdMaxNs INTEGER,"
	" thresholdNs INTEGER, snapshotTs INTEGER, PRIMARY KEY (pid, tid)) WITHOUT ROWID;"
	"CREATE TABLE BPFSIGHT_GIL_SHORT_WAITS (pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" globalTid INTEGER NOT NULL, bucket INTEGER NOT NULL, lowNs INTEGER NOT NULL,"
	" highNs INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (pid, tid, bucket))"
	" WITHOUT ROWID;"
	"CREATE TABLE BPFSIGHT_GIL_BLAME (pid INTEGER NOT NULL, waiterTid INTEGER NOT NULL,"
	" holderTid INTEGER NOT NULL, globalTid INTEGER NOT NULL, holderGlobalTid INTEGER,"
	" count INTEGER NOT NULL, totalNs INTEGER NOT NULL, snapshotTs INTEGER NOT NULL,"
	" PRIMARY KEY (pid, waiterTid, holderTid)) WITHOUT ROWID;"
	"CREATE TABLE BPFSIGHT_GIL_PROCESSES (pid INTEGER PRIMARY KEY, python TEXT NOT NULL,"
	" pyVersionHex INTEGER NOT NULL, method TEXT NOT NULL, flags INTEGER NOT NULL,"
	" freeThreaded INTEGER NOT NULL, mutex INTEGER NOT NULL, holder INTEGER NOT NULL,"
	" verified INTEGER NOT NULL, interpreter TEXT, note TEXT, gilAddress INTEGER NOT NULL,"
	" ts INTEGER NOT NULL);";

static const char gil_indexes[] =
	"CREATE INDEX BPFSIGHT_GIL_WAITS_start ON BPFSIGHT_GIL_WAITS(start);"
	"CREATE INDEX BPFSIGHT_GIL_WAITS_globalTid ON BPFSIGHT_GIL_WAITS(globalTid);"
	"CREATE INDEX BPFSIGHT_GIL_HOLDS_start ON BPFSIGHT_GIL_HOLDS(start);"
	"CREATE INDEX BPFSIGHT_GIL_HOLDS_globalTid ON BPFSIGHT_GIL_HOLDS(globalTid);"
	"CREATE INDEX BPFSIGHT_GIL_THREADS_globalTid ON BPFSIGHT_GIL_THREADS(globalTid);";

enum gil_stmt {
	L_WAIT,
	L_ROUND,
	L_SAMPLE,
	L_HOLD,
	L_AGG,
	L_SHORT,
	L_BLAME,
	L_PROC,
	L_THREAD,
	L_NSTMT
};

static const char *const gil_sql[L_NSTMT] = {
	[L_WAIT] = "INSERT INTO BPFSIGHT_GIL_WAITS VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[L_ROUND] = "INSERT INTO BPFSIGHT_GIL_HOLDER_ROUNDS VALUES (?, ?, ?, ?, ?, ?)",
	[L_SAMPLE] = "INSERT INTO BPFSIGHT_GIL_HOLDER_SAMPLES VALUES (?, ?, ?, ?, ?, ?)",
	[L_HOLD] = "INSERT INTO BPFSIGHT_GIL_HOLDS VALUES (?, ?, ?)",
	/* Snapshots are cumulative: the last one per key is the one that counts. */
	[L_AGG] = "INSERT OR REPLACE INTO BPFSIGHT_GIL_THREADS VALUES"
		  " (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
	[L_SHORT] = "INSERT OR REPLACE INTO BPFSIGHT_GIL_SHORT_WAITS VALUES (?, ?, ?, ?, ?, ?, ?)",
	[L_BLAME] = "INSERT OR REPLACE INTO BPFSIGHT_GIL_BLAME VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
	[L_PROC] = "INSERT OR REPLACE INTO BPFSIGHT_GIL_PROCESSES VALUES"
		   " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	/* At the end: a thread's name, and its row when no aggregate came. */
	[L_THREAD] =
		"INSERT INTO BPFSIGHT_GIL_THREADS (pid, tid, globalTid, name)"
		" VALUES (?, ?, ?, ?) ON CONFLICT (pid, tid) DO UPDATE SET name = excluded.name",
};

#define GT_SEEN 0x1 /* a THREAD, FORK (the child) or gil record named it */
#define GT_DATA 0x2 /* it has an aggregate or a wait record: listed whatever its process */

struct sq_gil {
	sqlite3_stmt *stmt[L_NSTMT];
	struct hmap *threads; /* {pid, tid} -> u8 GT_* */
	struct hmap *pythons; /* {pid, 0} -> u8: a GIL_PROC record came */
};

static int gil_step(struct sq *s, struct sq_gil *g, enum gil_stmt i)
{
	return sq_run(s, g->stmt[i]);
}

static void gil_free(void *st)
{
	struct sq_gil *g = st;

	sq_finalize(g->stmt, L_NSTMT);
	hmap__free(g->threads);
	hmap__free(g->pythons);
	free(g);
}

static int gil_open(struct sq *s, void **st)
{
	struct sq_gil *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	*st = g;
	g->threads = hmap__new(1);
	g->pythons = hmap__new(1);
	if (!g->threads || !g->pythons)
		return -ENOMEM;
	return sq_prepare(s, gil_sql, g->stmt, L_NSTMT);
}

static int gil_thread(struct sq_gil *g, __u32 pid, __u32 tid, __u8 flags)
{
	__u8 *f = hmap__get(g->threads, (struct hkey){ pid, tid }, 1);

	if (!f)
		return -ENOMEM;
	*f |= GT_SEEN | flags;
	return 0;
}

static void bind_holder(sqlite3_stmt *st, int col, __u32 pid, __u32 holder)
{
	if (holder)
		sqlite3_bind_int64(st, col, global_tid(pid, holder));
	else
		sqlite3_bind_null(st, col);
}

static int gil_wait(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec,
		    const struct event *ev)
{
	const struct bs_gil_wait *w = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_WAIT];
	int err = gil_thread(g, rec->pid, rec->tid, GT_DATA);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + w->dur);
	sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
	bind_holder(st, 4, rec->pid, w->holder_tid);
	sqlite3_bind_int64(st, 5, w->rounds);
	sqlite3_bind_int64(st, 6, w->flags);
	/* --stacks=gil: the waiter's stack, the holder's code in the wait's first round. */
	sq_bind_stack(st, 7, ev ? ev->stack : NULL);
	sq_bind_stack(st, 8, ev ? ev->holder_stack : NULL);
	return gil_step(s, g, L_WAIT);
}

/* --stacks=gil: one round of a wait, with the holder's stack (what gil_stacks blames). */
static int gil_round(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec,
		     const struct trace_model *m)
{
	const struct bs_gil_holder *h = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_ROUND];

	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + h->dur);
	sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
	bind_holder(st, 4, rec->pid, h->holder_tid);
	sq_bind_stack(st, 5, trace_model__event_stack(m, rec));
	sqlite3_bind_int64(st, 6, (__s64)h->covered_us * 1000);
	return gil_step(s, g, L_ROUND);
}

/* --stacks=gil: a timer sample of a holder while others waited (gil_stacks weighs by them). */
static int gil_sample(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec,
		      const struct trace_model *m)
{
	const struct bs_gil_sample *h = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_SAMPLE];

	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 3, h->waiters);
	sqlite3_bind_int64(st, 4, (__s64)h->period_us * 1000);
	sqlite3_bind_int64(st, 5, (__s64)h->dur);
	sq_bind_stack(st, 6, trace_model__event_stack(m, rec));
	return gil_step(s, g, L_SAMPLE);
}

static int gil_hold(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec)
{
	const struct bs_gil_hold *h = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_HOLD];
	int err = gil_thread(g, rec->pid, rec->tid, 0);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, rec->ts);
	sqlite3_bind_int64(st, 2, rec->ts + h->dur);
	sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
	return gil_step(s, g, L_HOLD);
}

/* The histogram's buckets that counted a wait: bucket i holds [2^i, 2^(i+1)) ns, 0 from 0. */
static int gil_short_waits(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec,
			   const struct bs_gil_agg *a)
{
	sqlite3_stmt *st = g->stmt[L_SHORT];
	int err = 0;

	for (int i = 0; !err && i < BS_GIL_HIST; i++) {
		if (!a->v.short_hist[i])
			continue;
		sqlite3_bind_int64(st, 1, rec->pid);
		sqlite3_bind_int64(st, 2, rec->tid);
		sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
		sqlite3_bind_int64(st, 4, i);
		sqlite3_bind_int64(st, 5, i ? 1ll << i : 0);
		sqlite3_bind_int64(st, 6, 1ll << (i + 1));
		sqlite3_bind_int64(st, 7, (__s64)a->v.short_hist[i]);
		err = gil_step(s, g, L_SHORT);
	}
	return err;
}

static int gil_agg(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec)
{
	const struct bs_gil_agg *a = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_AGG];
	int err = gil_thread(g, rec->pid, rec->tid, GT_DATA);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, rec->tid);
	sqlite3_bind_int64(st, 3, global_tid(rec->pid, rec->tid));
	sqlite3_bind_int64(st, 4, (__s64)a->v.wait_count);
	sqlite3_bind_int64(st, 5, (__s64)a->v.wait_total_ns);
	sqlite3_bind_int64(st, 6, (__s64)a->v.wait_max_ns);
	sqlite3_bind_int64(st, 7, (__s64)a->v.hold_count);
	sqlite3_bind_int64(st, 8, (__s64)a->v.hold_total_ns);
	sqlite3_bind_int64(st, 9, (__s64)a->v.hold_max_ns);
	sqlite3_bind_int64(st, 10, (__s64)a->threshold_ns);
	sqlite3_bind_int64(st, 11, rec->ts);
	err = gil_step(s, g, L_AGG);
	return err ? err : gil_short_waits(s, g, rec, a);
}

static int gil_blame(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec)
{
	const struct bs_gil_blame *b = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_BLAME];

	sqlite3_bind_int64(st, 1, rec->pid);
	sqlite3_bind_int64(st, 2, rec->tid);
	sqlite3_bind_int64(st, 3, b->holder_tid);
	sqlite3_bind_int64(st, 4, global_tid(rec->pid, rec->tid));
	bind_holder(st, 5, rec->pid, b->holder_tid);
	sqlite3_bind_int64(st, 6, (__s64)b->count);
	sqlite3_bind_int64(st, 7, (__s64)b->total_ns);
	sqlite3_bind_int64(st, 8, rec->ts);
	return gil_step(s, g, L_BLAME);
}

static int gil_proc(struct sq *s, struct sq_gil *g, const struct bs_hdr *rec,
		    const struct trace_model *m)
{
	const struct bs_gil_proc *p = (const void *)rec;
	sqlite3_stmt *st = g->stmt[L_PROC];
	char ver[32];

	if (!hmap__get(g->pythons, (struct hkey){ rec->pid, 0 }, 1))
		return -ENOMEM;
	gil_version_str(p->py_version, ver, sizeof(ver));
	sqlite3_bind_int64(st, 1, rec->pid);
	sq_bind_text(st, 2, ver);
	sqlite3_bind_int64(st, 3, p->py_version);
	sqlite3_bind_text(st, 4, gil_method_name(p->method), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, p->flags);
	sqlite3_bind_int(st, 6, !!(p->flags & BS_GIL_PROC_FREE_THREADED));
	sqlite3_bind_int(st, 7, !!(p->flags & BS_GIL_PROC_MUTEX));
	sqlite3_bind_int(st, 8, !!(p->flags & BS_GIL_PROC_HOLDER));
	sqlite3_bind_int(st, 9, !!(p->flags & BS_GIL_PROC_VERIFIED));
	sq_bind_text(st, 10, trace_model__string(m, p->object_id));
	sq_bind_text(st, 11, trace_model__string(m, p->note_id));
	sqlite3_bind_int64(st, 12, (__s64)p->gil_addr);
	sqlite3_bind_int64(st, 13, rec->ts);
	return gil_step(s, g, L_PROC);
}

static int gil_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	switch (rec->type) {
	case BS_REC_GIL_WAIT:
		return gil_wait(s, st, rec, ev);
	case BS_REC_GIL_HOLDER:
		return gil_round(s, st, rec, m);
	case BS_REC_GIL_SAMPLE:
		return gil_sample(s, st, rec, m);
	case BS_REC_GIL_HOLD:
		return gil_hold(s, st, rec);
	case BS_REC_GIL_AGG:
		return gil_agg(s, st, rec);
	case BS_REC_GIL_BLAME:
		return gil_blame(s, st, rec);
	case BS_REC_GIL_PROC:
		return gil_proc(s, st, rec, m);
	default:
		return 0;
	}
}

/* The threads gil_sum may list: those the trace names, before it knows which are python. */
static int gil_observe(struct sq *s, void *st, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;

	switch (rec->type) {
	case BS_REC_THREAD:
		return gil_thread(st, rec->pid, rec->tid, 0);
	case BS_REC_FORK:
		return rec->size >= sizeof(*f) ? gil_thread(st, f->child_pid, f->child_tid, 0) : 0;
	default:
		return 0;
	}
}

/*
 * The rows of the threads gil_sum lists (of a python process, or with GIL data of their own),
 * named as stats names them.
 */
static int gil_finish(struct sq *s, void *gst, const struct trace_model *m)
{
	struct sq_gil *g = gst;
	sqlite3_stmt *st = g->stmt[L_THREAD];
	struct hkey key;
	size_t it = 0;
	__u8 *flags;
	__u32 pid, tid;
	int err = 0;

	while (!err && (flags = hmap__next(g->threads, &it, &key))) {
		pid = (__u32)key.a;
		tid = (__u32)key.b;
		if (!(*flags & GT_DATA) && !hmap__get(g->pythons, (struct hkey){ pid, 0 }, 0))
			continue;
		sqlite3_bind_int64(st, 1, pid);
		sqlite3_bind_int64(st, 2, tid);
		sqlite3_bind_int64(st, 3, global_tid(pid, tid));
		sq_bind_text(st, 4, trace_model__thread_name(m, tid));
		err = gil_step(s, g, L_THREAD);
	}
	return err;
}

const struct sqlite_family gil_sqlite = {
	.schema = gil_schema,
	.indexes = gil_indexes,
	.open = gil_open,
	.free = gil_free,
	.observe = gil_observe,
	.record = gil_record,
	.finish = gil_finish,
};
