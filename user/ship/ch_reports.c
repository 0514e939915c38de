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
#include "ch_sql.h"

/* nsys's timing columns (time_sum.h), then the name. */
static const struct ch_col ch_time_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "name", "Name", 't' },	 {},
};

/* The timing columns of ROWS by name, EXTRA's columns (of aggregates X) before the name. */
#define CH_TIME_SUM_X(rows, extra, x)                                                                                       \
	"SELECT total_ns * 100 / " CH_SCALAR(                                                                               \
		"SELECT sum(dur) FROM " CH_DB                                                                               \
		".events WHERE {W} AND " rows) ", total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, " extra       \
					       "name FROM ("                                                                \
					       "SELECT sum(dur) AS total_ns, count() AS count, avg(dur) AS avg_ns, " x      \
					       "arraySort(groupArray(dur)) AS s, "                                          \
					       "if(count % 2 = 1, toFloat64(s[intDiv(count, 2) + 1]), "                     \
					       "(s[intDiv(count, 2)] + s[intDiv(count, 2) + 1]) / 2) AS med_ns, "           \
					       "min(dur) AS min_ns, max(dur) AS max_ns, stddevPop(dur) AS stddev_ns, name " \
					       "FROM " CH_DB ".events WHERE {W} AND " rows                                  \
					       " GROUP BY name) "                                                           \
					       "ORDER BY total_ns DESC, name FORMAT TabSeparated"
#define CH_TIME_SUM(rows) CH_TIME_SUM_X(rows, "", "")

static const struct ch_report ch_cuda_api_sum = {
	.name = "cuda_api_sum",
	.cols = ch_time_cols,
	.sql = CH_TIME_SUM(CH_API_ROWS("cuda_api")),
	.needs = "cuda_api", /* its rows by name: none without a call */
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
	.needs = "nccl_api", /* its rows by name: none without a call */
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

/* A collective's calls that returned (nccl_coll.c leaves out those in flight: a hang's dump's) */
#define CH_COLL_ROWS                                                                               \
	"kind = 'nccl_api' AND position(args, '\"seq\":') > 0 AND "                                \
	"position(args, '\"in_flight\":') = 0"

static const struct ch_report ch_nccl_stragglers = {
	.name = "nccl_stragglers",
	.cols = ch_straggler_cols,
	.sql = "SELECT comm, cseq, argMin(name, rec), count() AS ranks, any(nranks), "
	       "argMax(rank, last), concat('rank ', toString(argMax(rank, last)), ' @ ', argMax(host, last)), "
	       "max(at) - min(at), toUInt64(count() * max(at) - sum(at)) AS wait_ns, "
	       "max(at + dur) - min(at + dur), min(ts) FROM ("
	       "SELECT visitParamExtractString(args, 'unique_id_hash') AS comm, "
	       "visitParamExtractUInt(args, 'seq') AS cseq, name, rank, host, dur, ts, "
	       /*
		* As nccl_straggle.c: the name of the collective's first record in the file (two
		* functions' calls can share a seq), and of entries at the same nanosecond the later
		* record's (its >=): by the row's seq, never whichever row a server thread met first.
		*/
	       "(seq, file_id) AS rec, (ts, seq, file_id) AS last, "
	       "visitParamExtractInt(args, 'nranks') AS nranks, ts - " CH_SCALAR(
		       "SELECT min(ts) FROM " CH_DB
		       ".events WHERE {W} AND " CH_COLL_ROWS) " AS at "
							      "FROM " CH_DB
							      ".events WHERE {W} AND " CH_COLL_ROWS
							      ") "
							      "GROUP BY comm, cseq HAVING ranks > 1 ORDER BY wait_ns DESC, comm, cseq "
							      "FORMAT TabSeparated",
	.needs = "nccl_api", /* the calls by collective */
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
	.sql = "SELECT " CH_NS_ID("pid") " AS fpid, " CH_NS_ID(
		"tid") " AS ftid, oncpu_ns, "
		       "offcpu_ns, blocked_ns, runnable_ns, switches, "
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
		       ".events WHERE {J} AND kind = 'trace_window') AS jr1 USING file_id "
		       "WHERE {W} AND kind IN ('offcpu', 'offcpu_exit')) GROUP BY file_id, file, pid, tid) AS lhs "
		       "ANY LEFT JOIN (SELECT file_id, file, pid, tid, "
		       "if(position(args, '\"process\":') > 0, visitParamExtractString(args, 'process'), "
		       "NULL) AS process, if(position(args, '\"thread\":') > 0, "
		       "visitParamExtractString(args, 'thread'), NULL) AS thread, " CH_NAMES_NS
		       " AS ns FROM " CH_DB ".events "
		       "WHERE {J} AND kind = 'thread_names') AS jr2 USING file_id, file, pid, tid "
		       "ORDER BY offcpu_ns DESC, fpid, ftid FORMAT TabSeparated",
	.needs = "offcpu,offcpu_exit", /* the switch-outs by thread */
};

/*
 * gil_sum (gil_report.c), per thread of the Python processes (a `gil_python` row), or with
 * waits: the counts and totals of the thread's last `gil_agg` snapshot (its events' without
 * one); P50 and P99 over its waits' durations and the snapshot's short waits, each at its log2
 * bucket's middle capped by the threshold; the contention over the thread's life within the
 * file's first and last records (its `trace_window` row, the last wait's end), from its
 * fork, to its exit, to the recording's end. Holds are full mode's: NULL (left out) else.
 */
#define CH_GIL_H(i) "visitParamExtractUInt(agg, 'h" #i "')"
#define CH_GIL_HIST                                                                                                                                                                                                                                                                                                                                               \
	"[" CH_GIL_H(0) ", " CH_GIL_H(1) ", " CH_GIL_H(2) ", " CH_GIL_H(3) ", " CH_GIL_H(4) ", " CH_GIL_H(5) ", " CH_GIL_H(6) ", " CH_GIL_H(7) ", " CH_GIL_H(8) ", " CH_GIL_H(9) ", " CH_GIL_H(10) ", " CH_GIL_H(11) ", " CH_GIL_H(12) ", " CH_GIL_H(13) ", " CH_GIL_H(14) ", " CH_GIL_H(15) ", " CH_GIL_H(16) ", " CH_GIL_H(17) ", " CH_GIL_H(18) ", " CH_GIL_H( \
		19) ", " CH_GIL_H(20) ", " CH_GIL_H(21) ", " CH_GIL_H(22) ", " CH_GIL_H(23) ", " CH_GIL_H(24) ", " CH_GIL_H(25) ", " CH_GIL_H(26) ", " CH_GIL_H(27) ", " CH_GIL_H(28) ", " CH_GIL_H(29) ", " CH_GIL_H(30) ", " CH_GIL_H(31) "]"
/* Per thread: its waits, holds, last snapshot, fork and exit. */
#define CH_GIL_THREADS                                                                                            \
	"SELECT file_id, file, " CH_GIL_TASK("pid") " AS xpid, " CH_GIL_TASK(                                     \
		"tid") " AS xtid, "                                                                               \
		       "countIf(kind = 'gil_wait') AS ev_count, sumIf(dur, kind = 'gil_wait') AS ev_total, "      \
		       "maxIf(dur, kind = 'gil_wait') AS ev_max, groupArrayIf(dur, kind = 'gil_wait') AS waits, " \
		       "countIf(kind = 'gil_hold') AS hold_ev_count, sumIf(dur, kind = 'gil_hold') AS "           \
		       "hold_ev_total, countIf(kind = 'gil_agg') > 0 AS has_agg, "                                \
		       "argMaxIf(args, seq, kind = 'gil_agg') AS agg, countIf(kind = 'fork') > 0 AS has_born, "   \
		       "argMaxIf(ts, seq, kind = 'fork') AS born, countIf(kind = 'exit') > 0 AS has_died, "       \
		       "argMaxIf(ts, seq, kind = 'exit') AS died FROM " CH_DB                                     \
		       ".events WHERE {W} AND kind IN "                                                           \
		       "('gil_wait', 'gil_hold', 'gil_agg', 'thread', 'fork', 'exit') "                           \
		       "GROUP BY file_id, file, xpid, xtid HAVING countIf(kind != 'exit') > 0"
/* Each Python process's last word on how it is measured. */
#define CH_GIL_PROCS                                                                               \
	"SELECT file_id, file, pid AS xpid, argMax(visitParamExtractString(args, 'method'), seq) " \
	"AS method FROM " CH_DB ".events WHERE {W} AND kind = 'gil_python' "                       \
	"GROUP BY file_id, file, xpid"
/* Each file's span: its first record, its last record or wait's end, its end. */
#define CH_GIL_SPAN                                                                                \
	"SELECT file_id, visitParamExtractInt(args, 'first_ts') AS first, "                        \
	"greatest(visitParamExtractInt(args, 'last_ts'), wend) AS last, "                          \
	"visitParamExtractInt(args, 'end_ts') AS end_ts FROM " CH_DB ".events ANY LEFT JOIN ("     \
	"SELECT file_id, max(ts + toInt64(dur)) AS wend FROM " CH_DB ".events WHERE {J} AND "      \
	"kind = 'gil_wait' GROUP BY file_id) AS jr3 USING file_id WHERE {J} AND kind = 'trace_window'"
/* Each thread's name as the file's reports have it. */
#define CH_GIL_NAMES                                                                               \
	"SELECT file_id, file, tid AS xtid, any(if(position(args, '\"thread\":') > 0, "            \
	"visitParamExtractString(args, 'thread'), '')) AS thread_name, "                           \
	"any(" CH_NAMES_NS ") AS ns FROM " CH_DB ".events "                                        \
	"WHERE {J} AND kind = 'thread_names' GROUP BY file_id, file, xtid"
/* stats_math.h's percentile P of the weighted samples sv (sorted), cum (the weights' sums). */
#define CH_PCT(p, n)                                                                               \
	"(n - 1) * " p " AS pos" n ", toUInt64(floor(pos" n ")) AS rk" n ", "                      \
	"sv[arrayFirstIndex(c -> c > rk" n ", cum)] AS lo" n ", if(n = 0, 0, "                     \
	"if(pos" n " = rk" n " OR rk" n " + 1 >= n, lo" n ", lo" n " + (sv[arrayFirstIndex(c -> "  \
	"c > rk" n " + 1, cum)] - lo" n ") * (pos" n " - rk" n "))) AS p" n

static const struct ch_col ch_gil_sum_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "thread_name", "Thread", 't' },
	{ "wait_count", "Waits", 'u' },
	{ "wait_total_ns", "Wait Total (ns)", 'u' },
	{ "wait_p50_ns", "Wait P50 (ns)", 'd' },
	{ "wait_p99_ns", "Wait P99 (ns)", 'd' },
	{ "wait_max_ns", "Wait Max (ns)", 'u' },
	{ "contention_pct", "Contention (%)", 'd' },
	{ "method", "Method", 't' },
	{ "hold_count", "Holds", 'u', 1 },
	{ "hold_total_ns", "Hold Total (ns)", 'u', 1 },
	{},
};

static const struct ch_report ch_gil_sum = {
	.name = "gil_sum",
	.cols = ch_gil_sum_cols,
	.sql = "SELECT " CH_NS_ID("xpid") " AS fpid, " CH_NS_ID(
		"xtid") " AS ftid, thread_name, "
			"count, total, p50, p99, wmax, "
			"if(wall > 0, total * 100 / wall, 0), if(method = '', 'none', method), "
			"if(full, hold_count, NULL), if(full, hold_total, NULL) FROM ("
			"SELECT xpid, xtid, ns, thread_name, method, "
			"if(has_agg, visitParamExtractUInt(agg, 'wait_count'), ev_count) AS count, "
			"if(has_agg, visitParamExtractUInt(agg, 'wait_total_ns'), ev_total) AS total, "
			"if(has_agg, visitParamExtractUInt(agg, 'wait_max_ns'), ev_max) AS wmax, "
			"if(has_agg, visitParamExtractUInt(agg, 'hold_count'), hold_ev_count) AS hold_count, "
			"if(has_agg, visitParamExtractUInt(agg, 'hold_total_ns'), hold_ev_total) AS "
			"hold_total, visitParamExtractUInt(agg, 'threshold_ns') AS thr, "
			"arrayConcat(arrayMap(x -> toFloat64(x), waits), arrayMap(i -> (if(i = 0, 0, "
			"pow(2, i)) + greatest(if(thr > 0 AND pow(2, i + 1) > thr, toFloat64(thr), "
			"pow(2, i + 1)), if(i = 0, 0, pow(2, i)))) / 2, range(32))) AS vals, "
			"arrayConcat(arrayMap(x -> toUInt64(1), waits), if(has_agg, " CH_GIL_HIST
			", "
			"arrayMap(x -> toUInt64(0), range(32)))) AS wts, arraySum(wts) AS n, "
			"arraySort((x, y) -> x, vals, wts) AS sv, "
			"arrayCumSum(arraySort((y, x) -> x, wts, vals)) AS cum, " CH_PCT("0.5", "50") ", " CH_PCT(
				"0.99",
				"99") ", "
				      "if(has_born AND born > first, born, first) AS b, "
				      "if(has_died AND died < last, died, last) AS d0, "
				      "if(end_ts != 0 AND end_ts < d0, end_ts, d0) AS d, "
				      "if(d > b, d - b, 0) AS wall FROM ("
				      "SELECT * FROM (SELECT * FROM (" CH_GIL_THREADS
				      ") AS lhs ANY LEFT JOIN (" CH_GIL_PROCS
				      ") AS jr4 USING file_id, file, xpid WHERE method != '' OR has_agg OR ev_count > 0) AS lhs "
				      "ANY LEFT JOIN (" CH_GIL_SPAN
				      ") AS jr5 USING file_id) AS lhs ANY LEFT JOIN (" CH_GIL_NAMES
				      ") AS jr6 USING file_id, file, xtid) AS lhs "
				      "CROSS JOIN (SELECT count() > 0 AS full FROM " CH_DB
				      ".events WHERE {W} AND ("
				      "kind = 'gil_hold' OR (kind = 'gil_python' AND "
				      "visitParamExtractString(args, 'method') = 'take_gil') OR (kind = 'gil_agg' AND "
				      "visitParamExtractUInt(args, 'hold_count') > 0))) AS jr7 "
				      "ORDER BY total DESC, fpid, ftid FORMAT TabSeparated",
	.needs =
		"gil_wait,gil_agg,gil_python", /* a thread with waits, a snapshot or a Python process */
};

/*
 * export --format folded's lines (`stacks --from`): the CPU samples (`cpu_sample` rows, their
 * `stack_id` and whether in kernel code) counted by their stack's folded text (the file's
 * `stack` rows), one line per text, sorted as strcmp sorts.
 */
static const struct ch_col ch_folded_cols[] = {
	{ "stack", "Stack", 't' },
	{ "samples", "Samples", 'u' },
	{},
};

const struct ch_report ch_folded_stacks = {
	.name = "folded",
	.cols = ch_folded_cols,
	.sql = "SELECT text, count() FROM (SELECT file_id, visitParamExtractUInt(args, 'stack_id') "
	       "AS sid, toUInt8(name = 'kernel') AS kernel FROM " CH_DB ".events WHERE {W} AND "
	       "kind = 'cpu_sample') AS lhs ANY LEFT JOIN (SELECT file_id, visitParamExtractUInt(args, "
	       "'stack_id') AS sid, toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, "
	       "name AS text FROM " CH_DB ".events WHERE {J} AND kind = 'stack') AS jr8 "
	       "USING file_id, sid, kernel GROUP BY text ORDER BY text FORMAT TabSeparated",
};

/*
 * export --format folded-offcpu's lines (`stacks --from --offcpu`): the off-CPU intervals with
 * a stack (`offcpu` rows with a `stack_id`), their time summed by the stack's folded text, in
 * microseconds (a text under 1 us left out).
 */
const struct ch_report ch_folded_offcpu = {
	.name = "folded-offcpu",
	.cols = ch_folded_cols,
	.sql = "SELECT text, intDiv(sum(dur), 1000) AS us FROM (SELECT file_id, dur, "
	       "visitParamExtractUInt(args, 'stack_id') AS sid, toUInt8(0) AS kernel FROM " CH_DB
	       ".events WHERE {W} AND kind = 'offcpu' AND position(args, '\"stack_id\":') > 0) AS lhs "
	       "ANY LEFT JOIN (SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS sid, "
	       "toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, name AS text FROM " CH_DB
	       ".events WHERE {J} AND kind = 'stack') AS jr9 USING file_id, sid, kernel GROUP BY text "
	       "HAVING us > 0 ORDER BY text FORMAT TabSeparated",
};

const struct ch_report *const ch_reports[] = {
	&ch_cuda_api_sum,
	&ch_nccl_sum,
	&ch_nccl_stragglers,
	&ch_osrt_sum,
	&ch_sched_sum,
	&ch_gil_sum,
	&ch_gil_blocked_by,
	/* over the events' stacks: ch_cpu_reports.c */
	&ch_cpu_sum,
	&ch_gil_stacks,
	&ch_offcpu_stacks,
	&ch_mem_peak,
	&ch_mem_leaks, /* ch_mem_leaks.c */
	/* across ranks: ch_rank_reports.c */
	&ch_ranks,
	&ch_nccl_rank_sum,
	&ch_rank_waits,
	NULL,
};

const struct ch_report *ch_report__find(const char *name)
{
	for (const struct ch_report *const *r = ch_reports; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	return NULL;
}

static const struct ch_col ch_file_order_cols[] = {
	{ "files", "Files", 't' },
	{},
};

const struct ch_report ch_file_order = {
	.name = "file_order",
	.cols = ch_file_order_cols,
	/* no file (rows of none): a typed empty array, where 18.16 types `[]` as Array(Nothing),
	 * which indexOf refuses against a file id (every query of {F} failed) */
	.sql = "SELECT if(empty(o), 'emptyArrayString()', concat('[', arrayStringConcat(arrayMap("
	       "x -> concat('\\'', x, '\\''), o), ', '), ']')) FROM (SELECT (" CH_FILE_ORDER
	       ") AS o) FORMAT TabSeparated",
};

/* TEXT with each {W} WHERE, {J} JOB, {F} FILES: malloc'd. */
static char *expand(const char *text, const char *where, const char *job, const char *files)
{
	size_t wl = strlen(where), jl = strlen(job), fl = strlen(files), n = 0, most;
	const char *p;
	char *out, *o;

	most = wl > jl ? wl : jl;
	most = most > fl ? most : fl;
	for (p = text; (p = strchr(p, '{')); p++)
		n++;
	out = malloc(strlen(text) + n * most + 1);
	if (!out)
		return NULL;
	for (o = out, p = text; *p;) {
		const char *with = NULL;

		if (p[0] == '{' && p[1] && p[2] == '}')
			with = p[1] == 'W' ? where : p[1] == 'J' ? job : p[1] == 'F' ? files : NULL;
		if (with) {
			o = stpcpy(o, with);
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

char *ch_report__sql(const struct ch_report *r, const char *where, const char *job,
		     const char *files)
{
	char *once, *out;

	if (files)
		return expand(r->sql, where, job, files);
	/* the order's subquery at each use: its own {W} and {J} expanded after */
	once = expand(r->sql, "{W}", "{J}", "(" CH_FILE_ORDER ")");
	out = once ? expand(once, where, job, "") : NULL;
	free(once);
	return out;
}
