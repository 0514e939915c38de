// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports as SQL (ch_reports.h), in what ClickHouse 18.16 runs as current releases do:
 * no window functions (a share of the total is a scalar subquery), no JSONExtract (arguments
 * by visitParamExtract*, which reads dump's flat keys), no quantileExactInclusive (a median
 * as stats takes it, between the two middle values, from the sorted array).
 */
#include <stdlib.h>
#include <string.h>
#include "ch_reports.h"
#include "ch_schema.h"

/* nsys's timing columns (time_sum.h), then the name. */
static const struct ch_col ch_time_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "name", "Name", 't' },	 {},
};

/* api_sum.h's rows of a uprobe family's KIND: the calls no traced call made, returned. */
#define CH_API_ROWS(kind)                                                                          \
	"kind = '" kind "' AND position(args, '\"depth\":') = 0 AND "                              \
	"position(args, '\"in_flight\":') = 0"

/* The timing columns of ROWS by name, EXTRA's columns (of aggregates X) before the name. */
#define CH_TIME_SUM_X(rows, extra, x)                                                              \
	"SELECT total_ns * 100 / (SELECT sum(dur) FROM " CH_DB ".events WHERE {W} AND " rows       \
	"), total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, " extra "name FROM ("      \
	"SELECT sum(dur) AS total_ns, count() AS count, avg(dur) AS avg_ns, " x                    \
	"arraySort(groupArray(dur)) AS s, "                                                        \
	"if(count % 2 = 1, toFloat64(s[intDiv(count, 2) + 1]), "                                   \
	"(s[intDiv(count, 2)] + s[intDiv(count, 2) + 1]) / 2) AS med_ns, "                         \
	"min(dur) AS min_ns, max(dur) AS max_ns, stddevPop(dur) AS stddev_ns, name "               \
	"FROM " CH_DB ".events WHERE {W} AND " rows " GROUP BY name) "                             \
	"ORDER BY total_ns DESC, name FORMAT TabSeparated"
#define CH_TIME_SUM(rows) CH_TIME_SUM_X(rows, "", "")

static const struct ch_report ch_cuda_api_sum = {
	.name = "cuda_api_sum",
	.cols = ch_time_cols,
	.sql = CH_TIME_SUM(CH_API_ROWS("cuda_api")),
};

/* nccl_report.c's: the bytes the collectives moved (NULL: none known), the failed calls. */
static const struct ch_col ch_nccl_sum_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "bytes", "Bytes", 'u' },	 { "errors", "Errors", 'u' },
	{ "name", "Name", 't' },	 {},
};

static const struct ch_report ch_nccl_sum = {
	.name = "nccl_sum",
	.cols = ch_nccl_sum_cols,
	.sql = CH_TIME_SUM_X(CH_API_ROWS("nccl_api"), "if(with_bytes > 0, bytes, NULL), errors, ",
			     "sumIf(visitParamExtractUInt(args, 'bytes'), "
			     "position(args, '\"bytes\":') > 0) AS bytes, "
			     "countIf(position(args, '\"bytes\":') > 0) AS with_bytes, "
			     "countIf(visitParamExtractInt(args, 'ret') != 0) AS errors, "),
};

/*
 * nccl_straggle.h's collectives: the calls of one communicator with one seq, of 2 ranks or
 * more; the waits from each entry to the last one's, their sum taken from the job's first
 * entry so that a thousand ranks' wall-clock ns do not pass 2^63.
 */
static const struct ch_col ch_straggler_cols[] = {
	{ "comm", "Comm", 't' },
	{ "seq", "Seq", 'u' },
	{ "name", "Collective", 't' },
	{ "ranks", "Ranks", 'u' },
	{ "nranks", "Of", 's' },
	{ "last_rank", "Last Rank", 's' },
	{ "last", "Last", 't' },
	{ "skew_ns", "Skew (ns)", 'u' },
	{ "wait_ns", "Wait (ns)", 'u' },
	{ "end_spread_ns", "End Spread (ns)", 'u' },
	{ "start_wall_ns", "Start (wall ns)", 's' },
	{},
};

#define CH_COLL_ROWS "kind = 'nccl_api' AND position(args, '\"seq\":') > 0"

static const struct ch_report ch_nccl_stragglers = {
	.name = "nccl_stragglers",
	.cols = ch_straggler_cols,
	.sql = "SELECT comm, seq, any(name), count() AS ranks, any(nranks), argMax(rank, at), "
	       "concat('rank ', toString(argMax(rank, at)), ' @ ', argMax(host, at)), "
	       "max(at) - min(at), toUInt64(count() * max(at) - sum(at)) AS wait_ns, "
	       "max(at + dur) - min(at + dur), min(ts) FROM ("
	       "SELECT visitParamExtractString(args, 'unique_id_hash') AS comm, "
	       "visitParamExtractUInt(args, 'seq') AS seq, name, rank, host, dur, ts, "
	       "visitParamExtractInt(args, 'nranks') AS nranks, ts - (SELECT min(ts) FROM " CH_DB
	       ".events WHERE {W} AND " CH_COLL_ROWS ") AS at "
	       "FROM " CH_DB ".events WHERE {W} AND " CH_COLL_ROWS ") "
	       "GROUP BY comm, seq HAVING ranks > 1 ORDER BY wait_ns DESC, comm, seq "
	       "FORMAT TabSeparated",
};

/*
 * osrt_sum (osrt_report.c): the calls with a record of their own, and the short calls' in-kernel
 * aggregates, shipped as `syscall_agg` rows: cumulative snapshots per thread and call, of which
 * every final one (the thread exited) counts and the last one when not final. As stats does,
 * an aggregate stands in for COUNT calls at its mean for the median and stddev; our own
 * uretprobe's returns (nr 335, traces from before osrt left them out) are not counts.
 */
#define CH_OSRT_NOT_OURS "visitParamExtractUInt(args, 'nr') != 335"
/* A snapshot's columns, named A (the final ones) or L (the last of each key). */
#define CH_OSRT_AGG_COLS(p)                                                                        \
	"visitParamExtractUInt(args, 'count') AS " p "w, "                                         \
	"visitParamExtractUInt(args, 'total_ns') AS " p "t, "                                      \
	"visitParamExtractUInt(args, 'min_ns') AS " p "lo, "                                       \
	"visitParamExtractUInt(args, 'max_ns') AS " p "hi"
/* Weighted samples (v, w) with their total, min and max: a call is one at its duration. */
#define CH_OSRT_SAMPLES                                                                                        \
	"SELECT name, toFloat64(dur) AS v, toUInt64(1) AS w, dur AS t, dur AS lo, dur AS hi "                  \
	"FROM " CH_DB ".events WHERE {W} AND kind = 'syscall' AND " CH_OSRT_NOT_OURS " "                       \
	"UNION ALL SELECT name, at / aw AS v, aw AS w, at AS t, alo AS lo, ahi AS hi FROM ("                   \
	"SELECT name, " CH_OSRT_AGG_COLS(                                                                      \
		"a") " FROM " CH_DB ".events WHERE {W} AND "                                                   \
		     "kind = 'syscall_agg' AND " CH_OSRT_NOT_OURS " AND "                                      \
		     "visitParamExtractUInt(args, 'final') = 1 UNION ALL SELECT name, argMax(lw, seq) AS aw, " \
		     "argMax(lt, seq) AS at, argMax(llo, seq) AS alo, argMax(lhi, seq) AS ahi FROM ("          \
		     "SELECT file_id, file, pid, tid, name, seq, visitParamExtractUInt(args, 'final') AS "     \
		     "lfinal, " CH_OSRT_AGG_COLS(                                                              \
			     "l") " FROM " CH_DB ".events WHERE {W} AND "                                      \
				  "kind = 'syscall_agg' AND " CH_OSRT_NOT_OURS                                 \
				  ") GROUP BY file_id, file, pid, tid, name "                                  \
				  "HAVING argMax(lfinal, seq) = 0) WHERE aw > 0"

/*
 * stats_math.h's median of weighted samples, as numpy's linear percentile: sorted by value,
 * the values at 0-based ranks floor((n - 1) / 2) and the next, by the weights' running sum.
 */
#define CH_WEIGHTED_MEDIAN                                                                         \
	"arraySort((x, y) -> x, groupArray(v), groupArray(w)) AS sv, "                             \
	"arrayCumSum(arraySort((y, x) -> x, groupArray(w), groupArray(v))) AS cum, "               \
	"(count - 1) / 2 AS pos, toUInt64(floor(pos)) AS rk, "                                     \
	"sv[arrayFirstIndex(c -> c > rk, cum)] AS med_lo, "                                        \
	"if(pos = rk OR rk + 1 >= count, med_lo, "                                                 \
	"med_lo + (sv[arrayFirstIndex(c -> c > rk + 1, cum)] - med_lo) * (pos - rk)) AS med_ns, "  \
	"arraySum((x, y) -> x * y, sv, arraySort((y, x) -> x, groupArray(w), groupArray(v))) / "   \
	"count AS mean, sqrt(arraySum((x, y) -> y * (x - mean) * (x - mean), sv, "                 \
	"arraySort((y, x) -> x, groupArray(w), groupArray(v))) / count) AS stddev_ns, "

static const struct ch_report ch_osrt_sum = {
	.name = "osrt_sum",
	.cols = ch_time_cols,
	.sql = "SELECT total_ns * 100 / (SELECT sum(t) FROM (" CH_OSRT_SAMPLES ")), total_ns, "
	       "count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name FROM (SELECT sum(t) AS "
	       "total_ns, sum(w) AS count, total_ns / count AS avg_ns, " CH_WEIGHTED_MEDIAN
	       "min(lo) AS min_ns, max(hi) AS max_ns, name FROM (" CH_OSRT_SAMPLES
	       ") GROUP BY name) "
	       "ORDER BY total_ns DESC, name FORMAT TabSeparated",
};

/*
 * sched_sum (sched_report.c), per thread: the switch-outs (`offcpu` rows, and a thread's last
 * as it exits, `offcpu_exit`), each adding the run slice it ended, clipped to the recording's
 * start (the file's `trace_window` row): a slice that began before it counts from it, a
 * switch-out clipped there (it began before the start) none. The names are the file's own
 * (its `thread_names` rows), NULL where the file has none, as stats leaves them out.
 */
#define CH_ONCPU "toInt64(visitParamExtractUInt(args, 'oncpu_ns'))"

static const struct ch_col ch_sched_sum_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "oncpu_ns", "On-CPU (ns)", 'u' },
	{ "offcpu_ns", "Off-CPU (ns)", 'u' },
	{ "blocked_ns", "Blocked (ns)", 'u' },
	{ "runnable_ns", "Runnable (ns)", 'u' },
	{ "switches", "Switches", 'u' },
	{ "preemptions", "Preemptions", 'u' },
	{ "process", "Process", 't' },
	{ "thread_name", "Thread", 't' },
	{},
};

static const struct ch_report ch_sched_sum = {
	.name = "sched_sum",
	.cols = ch_sched_sum_cols,
	.sql = "SELECT pid, tid, oncpu_ns, offcpu_ns, blocked_ns, runnable_ns, switches, "
	       "preemptions, process, thread FROM (SELECT file_id, file, pid, tid, "
	       "sum(oncpu_in) AS oncpu_ns, sum(dur) AS offcpu_ns, "
	       "sum(visitParamExtractUInt(args, 'blocked_ns')) AS blocked_ns, "
	       "sum(least(visitParamExtractUInt(args, 'runnable_ns'), dur)) AS runnable_ns, "
	       "count() AS switches, countIf(visitParamExtractUInt(args, 'state') = 0) AS "
	       "preemptions FROM (SELECT file_id, file, pid, tid, dur, args, "
	       "if(position(args, '\"began_before_start\":') > 0, toInt64(0), "
	       "if(ts - " CH_ONCPU " >= ws, " CH_ONCPU
	       ", greatest(ts - ws, toInt64(0)))) AS oncpu_in "
	       "FROM " CH_DB ".events ANY LEFT JOIN (SELECT file_id, ts AS ws FROM " CH_DB
	       ".events WHERE {J} AND kind = 'trace_window') USING file_id "
	       "WHERE {W} AND kind IN ('offcpu', 'offcpu_exit')) GROUP BY file_id, file, pid, tid) "
	       "ANY LEFT JOIN (SELECT file_id, file, pid, tid, "
	       "if(position(args, '\"process\":') > 0, visitParamExtractString(args, 'process'), "
	       "NULL) AS process, if(position(args, '\"thread\":') > 0, "
	       "visitParamExtractString(args, 'thread'), NULL) AS thread FROM " CH_DB ".events "
	       "WHERE {J} AND kind = 'thread_names') USING file_id, file, pid, tid "
	       "ORDER BY offcpu_ns DESC, pid, tid FORMAT TabSeparated",
};

const struct ch_report *const ch_reports[] = {
	&ch_cuda_api_sum, &ch_nccl_sum, &ch_nccl_stragglers, &ch_osrt_sum, &ch_sched_sum, NULL,
};

const struct ch_report *ch_report__find(const char *name)
{
	for (const struct ch_report *const *r = ch_reports; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	return NULL;
}

char *ch_report__sql(const struct ch_report *r, const char *where, const char *job)
{
	size_t wl = strlen(where), jl = strlen(job), n = 0;
	const char *p;
	char *out, *o;

	for (p = r->sql; (p = strchr(p, '{')); p++)
		n++;
	out = malloc(strlen(r->sql) + n * (wl > jl ? wl : jl) + 1);
	if (!out)
		return NULL;
	for (o = out, p = r->sql; *p;) {
		if (!strncmp(p, "{W}", 3) || !strncmp(p, "{J}", 3)) {
			memcpy(o, p[1] == 'W' ? where : job, p[1] == 'W' ? wl : jl);
			o += p[1] == 'W' ? wl : jl;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}
