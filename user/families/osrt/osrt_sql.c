// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt's report and rule's input as SQL in the server (stats --from, docs/CLICKHOUSE.md):
 * osrt_sum (osrt_report.c's: the calls and the short calls' in-kernel aggregates, as stats
 * weighs them), and what osrt's rule (osrt_verdict.c) keeps per thread and call.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "osrt.h"

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
	.sql = "SELECT total_ns * 100 / " CH_SCALAR(
		"SELECT sum(t) FROM (" CH_OSRT_SAMPLES
		")") ", total_ns, "
		     "count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name FROM (SELECT sum(t) AS "
		     "total_ns, sum(w) AS count, total_ns / count AS avg_ns, " CH_WEIGHTED_MEDIAN
		     "min(lo) AS min_ns, max(hi) AS max_ns, name FROM (" CH_OSRT_SAMPLES
		     ") GROUP BY name) "
		     "ORDER BY total_ns DESC, name FORMAT TabSeparated",
	.needs = "syscall,syscall_agg", /* the calls and their aggregates by name */
};

/*
 * osrt's rule (osrt_verdict.c) per thread and call: the calls' own records' time, the short
 * calls' last snapshot when it is not final, and the final ones' (the thread exited) summed.
 */
static const struct ch_col ch_osrt_calls_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "nr", "Nr", 'u' },
	{ "events_ns", "Events (ns)", 'u' },
	{ "agg_ns", "Agg (ns)", 'u' },
	{ "closed_ns", "Closed (ns)", 'u' },
	{},
};

#define CH_AGG_TOTAL "visitParamExtractUInt(args, 'total_ns')"
#define CH_AGG_FINAL "visitParamExtractUInt(args, 'final')"

static const struct ch_report ch_osrt_thread_calls = {
	.name = "osrt_thread_calls",
	.cols = ch_osrt_calls_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", nr, events_ns, if(last_final = 1, 0, last_total), closed_ns FROM ("
		       "SELECT file_id, file, pid, tid, visitParamExtractUInt(args, 'nr') AS nr, "
		       "sumIf(dur, kind = 'syscall') AS events_ns, "
		       "sumIf(" CH_AGG_TOTAL ", kind = 'syscall_agg' AND " CH_AGG_FINAL " = 1) AS "
		       "closed_ns, argMaxIf(" CH_AGG_TOTAL
		       ", seq, kind = 'syscall_agg') AS last_total, "
		       "argMaxIf(" CH_AGG_FINAL ", seq, kind = 'syscall_agg') AS last_final "
		       "FROM " CH_DB ".events WHERE {W} AND kind IN ('syscall', 'syscall_agg') "
		       "GROUP BY file_id, file, pid, tid, nr) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
		       ") AS jv2 USING file_id, file, pid, tid FORMAT TabSeparated",
	.needs = "syscall,syscall_agg", /* the calls by thread */
};

static const struct ch_report *const osrt_sql_reports[] = {
	&ch_osrt_sum,
	NULL,
};

static const struct ch_report *const osrt_sql_inputs[] = {
	&ch_osrt_thread_calls,
	NULL,
};

/* osrt's SQL (struct family.sql). */
const struct family_sql osrt_sql = {
	.reports = osrt_sql_reports,
	.inputs = osrt_sql_inputs,
};
