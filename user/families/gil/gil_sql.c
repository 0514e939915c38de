// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil's reports as SQL in the server (stats --from, docs/CLICKHOUSE.md): gil_sum
 * (gil_report.c's: per thread, its waits' counts, totals and percentiles, the contention over
 * its life), gil_blocked_by (who held the GIL a thread waited for) and gil_stacks
 * (gil_stacks_report.c's: the holders' time by the line of the job's code they ran).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "gil.h"

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
 * gil_blocked_by (gil_report.c), per process, waiter and holder: a file's in-kernel totals
 * (`gil_blame` rows, cumulative: the last per key counts) when it has them, else its waits'
 * (`gil_wait` rows by their holder_tid). The ids with their rank namespace (a merged file's
 * holder_tid has it already); the names the file's (`thread_names`), "(unknown)" for no holder.
 */
static const struct ch_col ch_gil_blocked_by_cols[] = {
	{ "pid", "PID", 'u' },
	{ "waiter_tid", "Waiter TID", 'u' },
	{ "waiter_name", "Waiter", 't' },
	{ "holder_tid", "Holder TID", 'u' },
	{ "holder_name", "Holder", 't' },
	{ "wait_count", "Waits", 'u' },
	{ "total_ns", "Total (ns)", 'u' },
	{},
};

/* A row's holder_tid with its rank namespace: a merged file's has it, else its file's. */
#define CH_HOLDER                                                                                            \
	"if(visitParamExtractUInt(args, 'holder_tid') = 0 OR visitParamExtractUInt(args, "                   \
	"'holder_tid') > 4194303, visitParamExtractUInt(args, 'holder_tid'), bitOr(bitShiftLeft(" CH_FILE_NS \
	", 22), visitParamExtractUInt(args, 'holder_tid')))"

/* Per file, waiter and holder: the last snapshot's totals, else the waits'. */
#define CH_BLAME_ROWS                                                                              \
	"SELECT file_id, file, pid, tid, " CH_HOLDER " AS holder, "                                \
	"argMax(visitParamExtractUInt(args, 'count'), seq) AS cnt, "                               \
	"argMax(visitParamExtractUInt(args, 'total_ns'), seq) AS total FROM " CH_DB ".events "     \
	"WHERE {W} AND kind = 'gil_blame' GROUP BY file_id, file, pid, tid, holder "               \
	"UNION ALL SELECT file_id, file, pid, tid, " CH_HOLDER " AS "                              \
	"holder, count() AS cnt, sum(dur) AS total FROM " CH_DB ".events WHERE {W} AND "           \
	"kind = 'gil_wait' AND file_id NOT IN (SELECT file_id FROM " CH_DB ".events WHERE {J} "    \
	"AND kind = 'gil_blame') GROUP BY file_id, file, pid, tid, holder"

/* Each thread's name in a file, by its id with its rank namespace. */
#define CH_HOLDER_NAMES                                                                            \
	"SELECT file_id, bitOr(bitShiftLeft(" CH_NAMES_NS ", 22), tid) AS "                        \
	"holder, any(name) AS hname FROM " CH_DB ".events WHERE {J} AND kind = 'thread_names' "    \
	"GROUP BY file_id, holder"

static const struct ch_report ch_gil_blocked_by = {
	.name = "gil_blocked_by",
	.cols = ch_gil_blocked_by_cols,
	.sql = "SELECT fpid, fwaiter, wname, holder, if(holder = 0, '(unknown)', hname), cnt, "
	       "total FROM (SELECT file_id, holder, cnt, total, wname, " CH_NS_ID("pid") " AS fpid, " CH_NS_ID(
		       "tid") " AS fwaiter FROM ("
			      "SELECT * FROM (" CH_BLAME_ROWS
			      ") WHERE cnt > 0) AS lhs ANY LEFT JOIN (SELECT file_id, "
			      "file, pid, tid, name AS wname, " CH_NAMES_NS " AS ns FROM " CH_DB
			      ".events WHERE {J} AND kind = 'thread_names') AS jg1 "
			      "USING file_id, file, pid, tid) AS lhs ANY LEFT JOIN "
			      "(" CH_HOLDER_NAMES ") AS jg2 USING file_id, holder "
			      "ORDER BY total DESC, fwaiter, holder FORMAT TabSeparated",
	.needs = "gil_blame,gil_wait", /* the snapshots or the waits by holder */
};

static const struct ch_col ch_gil_stacks_cols[] = {
	{ "role", "Role", 't' },
	CH_FRAME_SUM_COLS,
};

/*
 * gil_stacks (gil_stacks_report.c): "holder" rows weighed by gil_holder_ns (a round of waits
 * less what the holder's samples covered, a sample's waiting), "waiter" rows by the waits.
 */
static const struct ch_report ch_gil_stacks = {
	.name = "gil_stacks",
	.cols = ch_gil_stacks_cols,
	.sql = CH_FRAME_SUM(
		"SELECT file_id, seq, label, ns, sid FROM (SELECT file_id, seq, 'holder' AS label, "
		"if(kind = 'gil_sample', dur, if(dur > cov, toUInt64(dur - cov), toUInt64(0))) AS "
		"ns, visitParamExtractUInt(args, 'covered_us') * 1000 AS cov, " CH_SID
		"kind IN ('gil_holder', 'gil_sample')) WHERE ns > 0 UNION ALL SELECT file_id, seq, "
		"'waiter' AS label, dur AS ns, " CH_SID "kind = 'gil_wait'"),
	.needs = "gil_holder,gil_sample,gil_wait", /* the items it weighs */
};

static const struct ch_report *const gil_sql_reports[] = {
	&ch_gil_sum,
	&ch_gil_blocked_by,
	&ch_gil_stacks,
	NULL,
};

/* gil's SQL (struct family.sql). */
const struct family_sql gil_sql = {
	.reports = gil_sql_reports,
};
