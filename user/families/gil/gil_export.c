// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family in the exports (export_model.h). The waits and holds are slices on their
 * threads, by their style. Beside them:
 *
 * A counter per python process whose threads waited, "GIL contention": the average number of
 * its threads waiting for the GIL in each GIL_BIN_NS (gil_contention.h), a value where it
 * changes and 0 after the last, written at the end (bins fill in any order), its bins aligned
 * with every other binned counter's. Memory: 8 bytes per 10 ms per python process that waited.
 *
 * Tables (nsys has none for the GIL), shaped so that the queries of docs/EXPORT.md reproduce
 * `stats -r gil_sum,gil_blocked_by,gil_procs` exactly:
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
 * Aggregates and blame are cumulative snapshots: the last row per key stays. Which threads
 * gil_sum lists is only known at the end (a thread created before its process was found to be
 * python), so the thread rows without an aggregate are written then. Memory: a byte per thread
 * seen and per python process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_model.h"
#include "gil.h"
#include "gil_contention.h"
#include "hmap.h"

#define GIL_BIN_NS 10000000ull /* 10 ms */

static const struct ex_column waits_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	EXC_INT("holderGlobalTid"),
	EXC_INT_NN("rounds"),
	EXC_INT_NN("flags"),
	EXC_INT("callchainId"),
	EXC_INT("holderCallchainId"),
	{ 0 },
};
static const struct ex_index start_tid_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table gil_waits = {
	"BPFSIGHT_GIL_WAITS",
	waits_cols,
	.indexes = start_tid_idx,
};

static const struct ex_column rounds_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	EXC_INT("holderGlobalTid"),
	EXC_INT("callchainId"),
	EXC_INT_NN("coveredNs"),
	{ 0 },
};
static const struct ex_table gil_rounds = { "BPFSIGHT_GIL_HOLDER_ROUNDS", rounds_cols };

static const struct ex_column samples_cols[] = {
	EXC_INT_NN("ts"),
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("waiters"),
	EXC_INT_NN("periodNs"),
	EXC_INT_NN("weightNs"),
	EXC_INT("callchainId"),
	{ 0 },
};
static const struct ex_table gil_samples = { "BPFSIGHT_GIL_HOLDER_SAMPLES", samples_cols };

static const struct ex_column holds_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	{ 0 },
};
static const struct ex_table gil_holds = {
	"BPFSIGHT_GIL_HOLDS",
	holds_cols,
	.indexes = start_tid_idx,
};

static const struct ex_column threads_cols[] = {
	EXC_INT_NN("pid"),
	EXC_INT_NN("tid"),
	EXC_INT_NN("globalTid"),
	EXC_TEXT("name"),
	EXC_INT("waitCount"),
	EXC_INT("waitTotalNs"),
	EXC_INT("waitMaxNs"),
	EXC_INT("holdCount"),
	EXC_INT("holdTotalNs"),
	EXC_INT("holdMaxNs"),
	EXC_INT("thresholdNs"),
	EXC_INT("snapshotTs"),
	{ 0 },
};
static const struct ex_index tid_idx[] = { { "globalTid", "globalTid" }, { 0 } };
static const struct ex_table gil_threads = {
	"BPFSIGHT_GIL_THREADS", threads_cols, "pid, tid", EX_TABLE_BY_KEY, tid_idx,
};

static const struct ex_column short_cols[] = {
	EXC_INT_NN("pid"),   EXC_INT_NN("tid"),	   EXC_INT_NN("globalTid"), EXC_INT_NN("bucket"),
	EXC_INT_NN("lowNs"), EXC_INT_NN("highNs"), EXC_INT_NN("count"),	    { 0 },
};
static const struct ex_table gil_short = {
	"BPFSIGHT_GIL_SHORT_WAITS",
	short_cols,
	"pid, tid, bucket",
	EX_TABLE_BY_KEY,
};

static const struct ex_column blame_cols[] = {
	EXC_INT_NN("pid"),	 EXC_INT_NN("waiterTid"),    EXC_INT_NN("holderTid"),
	EXC_INT_NN("globalTid"), EXC_INT("holderGlobalTid"), EXC_INT_NN("count"),
	EXC_INT_NN("totalNs"),	 EXC_INT_NN("snapshotTs"),   { 0 },
};
static const struct ex_table gil_blame = {
	"BPFSIGHT_GIL_BLAME",
	blame_cols,
	"pid, waiterTid, holderTid",
	EX_TABLE_BY_KEY,
};

static const struct ex_column procs_cols[] = {
	{ "pid", EX_COL_INTEGER, EX_COL_KEY },
	EXC_TEXT_NN("python"),
	EXC_INT_NN("pyVersionHex"),
	EXC_TEXT_NN("method"),
	EXC_INT_NN("flags"),
	EXC_INT_NN("freeThreaded"),
	EXC_INT_NN("mutex"),
	EXC_INT_NN("holder"),
	EXC_INT_NN("verified"),
	EXC_TEXT("interpreter"),
	EXC_TEXT("note"),
	EXC_INT_NN("gilAddress"),
	EXC_INT_NN("ts"),
	{ 0 },
};
static const struct ex_table gil_procs = { "BPFSIGHT_GIL_PROCESSES", procs_cols };

static const struct ex_table *const gil_tables[] = {
	&gil_waits, &gil_rounds, &gil_samples, &gil_holds, &gil_threads,
	&gil_short, &gil_blame,	 &gil_procs,   NULL,
};

#define GT_SEEN 0x1 /* a THREAD, FORK (the child) or gil record named it */
#define GT_DATA 0x2 /* it has an aggregate or a wait record: listed whatever its process */

struct gil_export {
	struct gil_contention *waits; /* timelines: waiting time per python process and bin */
	struct hmap *threads;	      /* tables: {pid, tid} -> u8 GT_* */
	struct hmap *pythons;	      /* tables: {pid, 0} -> u8: a GIL_PROC record came */
};

static void gil_free(void *st)
{
	struct gil_export *g = st;

	gil_contention__free(g->waits);
	hmap__free(g->threads);
	hmap__free(g->pythons);
	free(g);
}

static int gil_open(struct ex_sink *s, void **st)
{
	struct gil_export *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	*st = g;
	if (ex_wants(s, EX_TIMELINE) && !(g->waits = gil_contention__new(GIL_BIN_NS)))
		return -ENOMEM;
	if (ex_wants(s, EX_TABLES)) {
		g->threads = hmap__new(1);
		g->pythons = hmap__new(1);
		if (!g->threads || !g->pythons)
			return -ENOMEM;
	}
	return 0;
}

static int gil_thread(struct gil_export *g, __u32 pid, __u32 tid, __u8 flags)
{
	__u8 *f = hmap__get(g->threads, (struct hkey){ pid, tid }, 1);

	if (!f)
		return -ENOMEM;
	*f |= GT_SEEN | flags;
	return 0;
}

/* The waits' bins; the threads gil_sum may list: those the trace names, before it knows which
 * are python. */
static int gil_observe(struct ex_sink *s, void *st, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;
	struct gil_export *g = st;

	if (rec->type == BS_REC_GIL_WAIT && g->waits)
		return gil_contention__add(g->waits, rec, ex_bins_origin(s, rec->ts));
	if (!g->threads)
		return 0;
	switch (rec->type) {
	case BS_REC_THREAD:
		return gil_thread(g, rec->pid, rec->tid, 0);
	case BS_REC_FORK:
		return rec->size >= sizeof(*f) ? gil_thread(g, f->child_pid, f->child_tid, 0) : 0;
	default:
		return 0;
	}
}

static struct ex_value holder(__u32 pid, __u32 tid)
{
	return EX_V_INT_IF(tid, ex_gtid(pid, tid));
}

static int gil_wait(struct ex_sink *s, struct gil_export *g, const struct bs_hdr *rec,
		    const struct event *ev)
{
	const struct bs_gil_wait *w = (const void *)rec;
	int err = gil_thread(g, rec->pid, rec->tid, GT_DATA);
	/* --stacks=gil: the waiter's stack, the holder's code in the wait's first round. */
	struct ex_value v[] = {
		EX_V_INT(rec->ts),
		EX_V_INT(rec->ts + w->dur),
		EX_V_INT(ex_gtid(rec->pid, rec->tid)),
		holder(rec->pid, w->holder_tid),
		EX_V_INT(w->rounds),
		EX_V_INT(w->flags),
		EX_V_STACK(ev ? ev->stack : NULL),
		EX_V_STACK(ev ? ev->holder_stack : NULL),
	};

	return err ? err : ex_row(s, &gil_waits, EX_ROW_ADD, v, NULL);
}

static int gil_agg(struct ex_sink *s, struct gil_export *g, const struct bs_hdr *rec)
{
	const struct bs_gil_agg *a = (const void *)rec;
	__s64 gtid = ex_gtid(rec->pid, rec->tid);
	int err = gil_thread(g, rec->pid, rec->tid, GT_DATA);
	struct ex_value v[] = {
		EX_V_INT(rec->pid),
		EX_V_INT(rec->tid),
		EX_V_INT(gtid),
		EX_V_NULL,
		EX_V_UINT(a->v.wait_count),
		EX_V_UINT(a->v.wait_total_ns),
		EX_V_UINT(a->v.wait_max_ns),
		EX_V_UINT(a->v.hold_count),
		EX_V_UINT(a->v.hold_total_ns),
		EX_V_UINT(a->v.hold_max_ns),
		EX_V_UINT(a->threshold_ns),
		EX_V_INT(rec->ts),
	};

	/* Snapshots are cumulative: the last one per key is the one that counts. */
	if (!err)
		err = ex_row(s, &gil_threads, EX_ROW_REPLACE, v, NULL);
	/* The histogram's buckets that counted a wait: bucket i holds [2^i, 2^(i+1)) ns. */
	for (int i = 0; !err && i < BS_GIL_HIST; i++) {
		struct ex_value h[] = {
			EX_V_INT(rec->pid),
			EX_V_INT(rec->tid),
			EX_V_INT(gtid),
			EX_V_INT(i),
			EX_V_INT(i ? 1ll << i : 0),
			EX_V_INT(1ll << (i + 1)),
			EX_V_UINT(a->v.short_hist[i]),
		};

		if (a->v.short_hist[i])
			err = ex_row(s, &gil_short, EX_ROW_REPLACE, h, NULL);
	}
	return err;
}

static int gil_proc(struct ex_sink *s, struct gil_export *g, const struct bs_hdr *rec)
{
	const struct bs_gil_proc *p = (const void *)rec;
	char ver[32];
	struct ex_value v[] = {
		EX_V_INT(rec->pid),
		EX_V_TEXT(ver),
		EX_V_INT(p->py_version),
		EX_V_TEXT(gil_method_name(p->method)),
		EX_V_INT(p->flags),
		EX_V_INT(!!(p->flags & BS_GIL_PROC_FREE_THREADED)),
		EX_V_INT(!!(p->flags & BS_GIL_PROC_MUTEX)),
		EX_V_INT(!!(p->flags & BS_GIL_PROC_HOLDER)),
		EX_V_INT(!!(p->flags & BS_GIL_PROC_VERIFIED)),
		EX_V_TEXT(trace_model__string(s->model, p->object_id)),
		EX_V_TEXT(trace_model__string(s->model, p->note_id)),
		EX_V_UINT(p->gil_addr),
		EX_V_INT(rec->ts),
	};

	if (!hmap__get(g->pythons, (struct hkey){ rec->pid, 0 }, 1))
		return -ENOMEM;
	gil_version_str(p->py_version, ver, sizeof(ver));
	return ex_row(s, &gil_procs, EX_ROW_REPLACE, v, NULL);
}

/* Each record's row: the waits and holds, their rounds and samples, the snapshots. */
static int gil_record(struct ex_sink *s, void *st, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_gil_holder *h = (const void *)rec;
	const struct bs_gil_sample *m = (const void *)rec;
	const struct bs_gil_hold *d = (const void *)rec;
	const struct bs_gil_blame *b = (const void *)rec;
	struct gil_export *g = st;
	__s64 gtid = ex_gtid(rec->pid, rec->tid);
	int err;

	if (!g->threads)
		return 0;
	switch (rec->type) {
	case BS_REC_GIL_WAIT:
		return gil_wait(s, g, rec, ev);
	case BS_REC_GIL_HOLDER: /* --stacks=gil: a round of a wait, the holder's stack */
		return ex_row(
			s, &gil_rounds, EX_ROW_ADD,
			(struct ex_value[]){ EX_V_INT(rec->ts), EX_V_INT(rec->ts + h->dur),
					     EX_V_INT(gtid), holder(rec->pid, h->holder_tid),
					     EX_V_STACK(trace_model__event_stack(s->model, rec)),
					     EX_V_INT((__s64)h->covered_us * 1000) },
			NULL);
	case BS_REC_GIL_SAMPLE: /* --stacks=gil: a holder sampled while others waited */
		return ex_row(s, &gil_samples, EX_ROW_ADD,
			      (struct ex_value[]){
				      EX_V_INT(rec->ts), EX_V_INT(gtid), EX_V_INT(m->waiters),
				      EX_V_INT((__s64)m->period_us * 1000), EX_V_UINT(m->dur),
				      EX_V_STACK(trace_model__event_stack(s->model, rec)) },
			      NULL);
	case BS_REC_GIL_HOLD:
		err = gil_thread(g, rec->pid, rec->tid, 0);
		return err ? err
			   : ex_row(s, &gil_holds, EX_ROW_ADD,
				    (struct ex_value[]){ EX_V_INT(rec->ts),
							 EX_V_INT(rec->ts + d->dur),
							 EX_V_INT(gtid) },
				    NULL);
	case BS_REC_GIL_AGG:
		return gil_agg(s, g, rec);
	case BS_REC_GIL_BLAME:
		return ex_row(s, &gil_blame, EX_ROW_REPLACE,
			      (struct ex_value[]){ EX_V_INT(rec->pid), EX_V_INT(rec->tid),
						   EX_V_INT(b->holder_tid), EX_V_INT(gtid),
						   holder(rec->pid, b->holder_tid),
						   EX_V_UINT(b->count), EX_V_UINT(b->total_ns),
						   EX_V_INT(rec->ts) },
			      NULL);
	case BS_REC_GIL_PROC:
		return gil_proc(s, g, rec);
	default:
		return 0;
	}
}

static int gil_counters(struct ex_sink *s, struct gil_export *g)
{
	const struct time_bins *b;
	struct time_bins_iter bi;
	char desc[512];
	size_t it = 0;
	__u32 pid;
	__u64 ts;
	double v;
	int err = 0;

	snprintf(
		desc, sizeof(desc),
		"Average number of this process's threads waiting for the Python GIL in each "
		"%llu ms: their waiting time in the bin / %llu ms (2 = two threads waited all "
		"along). Only waits of at least %llu us (the recording's threshold) have a record "
		"and count here; shorter ones are only in the per-thread totals (bpfsight stats -r "
		"gil_sum).",
		GIL_BIN_NS / 1000000, GIL_BIN_NS / 1000000, GIL_THRESHOLD_NS / 1000);
	while (!err && (b = gil_contention__next(g->waits, &it, &pid))) {
		struct ex_counter c = {
			.on = { .kind = EX_PROCESS, .pid = pid },
			.name = GIL_CONTENTION_NAME,
			.cat = "gil",
			.desc = desc,
		};

		err = ex_counter_from(s, &c, b->origin);
		time_bins__iter_init(&bi, b);
		while (!err && time_bins__step(b, &bi, 0, &ts, &v))
			err = ex_count1(s, &c, ts, "waiting threads",
					(struct ex_value){ .kind = EX_REAL, .digits = 9, .d = v });
	}
	return err;
}

/*
 * The counters; the rows of the threads gil_sum lists (of a python process, or with GIL data
 * of their own), named as stats names them.
 */
static int gil_finish(struct ex_sink *s, void *st)
{
	struct gil_export *g = st;
	struct hkey key;
	size_t it = 0;
	__u8 *flags;
	int err = g->waits ? gil_counters(s, g) : 0;

	while (!err && g->threads && (flags = hmap__next(g->threads, &it, &key))) {
		__u32 pid = (__u32)key.a, tid = (__u32)key.b;
		struct ex_value v[12] = {
			EX_V_INT(pid),
			EX_V_INT(tid),
			EX_V_INT(ex_gtid(pid, tid)),
			EX_V_TEXT(trace_model__thread_name(s->model, tid)),
		};

		if (!(*flags & GT_DATA) && !hmap__get(g->pythons, (struct hkey){ pid, 0 }, 0))
			continue;
		err = ex_row(s, &gil_threads, EX_ROW_MERGE, v, NULL);
	}
	return err;
}

const struct family_export gil_export = {
	.tables = gil_tables,
	.open = gil_open,
	.free = gil_free,
	.observe = gil_observe,
	.record = gil_record,
	.finish = gil_finish,
};
