// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl's reports and rules' inputs as SQL in the server (stats --from, docs/CLICKHOUSE.md):
 * nccl_sum (nccl_report.c's), nccl_stragglers (nccl_straggle.h's collectives), nccl_rank_sum
 * (nccl_rank_sql.c) and what the hang rule keeps of every collective (nccl_hang_state,
 * nccl_hang_report.c's state: each rank's collectives entered and left).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "nccl.h"

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
 * nccl_hang.c's state. Per rank process and communicator (its unique-id hash: a communicator
 * whose id was not seen is not in the rows), what the last collective entered and the last
 * left were (the later record of equal numbers, as the pass keeps it), and its thread, rank
 * and size as the last call said them ('r' rows); per thread, the outermost call in flight of
 * a uprobe-API family that is no collective, where it really began ('o' rows: a call entered
 * before the window began at its `began_ts`, a monotonic time, on the wall clock by its file's
 * clock_shift).
 */
static const struct ch_col ch_hang_cols[] = {
	{ "what", "What", 't' },
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "comm", "Communicator", 't' },
	{ "rank", "Rank", 's' },
	{ "nranks", "Ranks", 's' },
	{ "entered", "Entered", 's' },
	{ "name", "Name", 't' },
	{ "entered_ts", "Entered At", 's' },
	{ "entered_open", "In It", 'u' },
	{ "bytes", "Bytes", 's' },
	{ "left", "Left", 's' },
	{ "left_ts", "Left At", 's' },
	{},
};

/* The rows of the files' calls with where they began (on the wall clock). */
#define CH_BEGAN_ROWS(filter)                                                                      \
	"SELECT * FROM (SELECT file_id, file, seq, pid, tid, ts, dur, name, args FROM " CH_DB      \
	".events WHERE {W} AND " filter ") AS lhs ANY LEFT JOIN (SELECT file_id, "                 \
	"visitParamExtractInt(args, 'clock_shift') AS shift FROM " CH_DB                           \
	".events WHERE {J} AND kind = 'trace_window') AS jh4 USING file_id"
#define CH_BEGAN                                                                                   \
	"if(" CH_HAS("began_ts") ", toInt64(visitParamExtractUInt(args, 'began_ts')) + shift, ts)"
/* A collective's order key: its number, then its record's place (both under 2^32). */
#define CH_COLL_KEY "toUInt64(visitParamExtractUInt(args, 'seq')) * 4294967296 + seq"

static const struct ch_report ch_nccl_hang_state = {
	.name = "nccl_hang_state",
	.cols = ch_hang_cols,
	.sql =
		"SELECT what, " CH_NS_ID("pid") ", " CH_NS_ID(
			"tid") ", comm, crank, cnranks, entered, "
			       "fn, entered_ts, entered_open, nbytes, lft, lft_ts FROM (SELECT *, xtid AS tid FROM ("
			       /* the ranks' collectives */
			       "SELECT 'r' AS what, file_id, file, pid, argMax(tid, seq) AS xtid, comm, "
			       "toInt64(if(countIf(" CH_HAS(
				       "rank") ") > 0, argMaxIf(visitParamExtractInt(args, "
					       "'rank'), seq, " CH_HAS(
						       "rank") "), -1)) AS crank, "
							       "toInt64(if(countIf(" CH_HAS("nranks") ") > 0, argMaxIf(visitParamExtractInt(args, "
												      "'nranks'), seq, " CH_HAS("nranks") "), -1)) AS cnranks, "
																	  "toInt64(max(visitParamExtractUInt(args, 'seq'))) AS entered, "
																	  "argMax(name, " CH_COLL_KEY
																	  ") AS fn, toInt64(argMax(" CH_BEGAN
																	  ", " CH_COLL_KEY
																	  ")) AS entered_ts, argMax(toUInt8(" CH_HAS("in_flight") "), " CH_COLL_KEY ") AS entered_open, toInt64(argMax(" CH_INT_OR_NONE("bytes") ", " CH_COLL_KEY ")) AS nbytes, toInt64(if(countIf(NOT " CH_HAS("in_flight") ") > 0, "
																																											      "toInt64(maxIf(visitParamExtractUInt(args, 'seq'), NOT " CH_HAS("in_flight") ")), -1)) "
																																																					   "AS lft, toInt64(argMaxIf(ts + toInt64(dur), " CH_COLL_KEY ", NOT " CH_HAS("in_flight") ")) AS lft_ts FROM (SELECT *, visitParamExtractString(args, "
																																																																   "'unique_id_hash') AS comm FROM (" CH_BEGAN_ROWS("kind = 'nccl_api' AND " CH_HAS("seq") " AND " CH_HAS("unique_id_hash")) ")) "
																																																																															     "GROUP BY file_id, file, pid, comm UNION ALL "
																																																																															     /* the calls in flight that are no collective */
																																																																															     "SELECT 'o' AS what, file_id, file, pid, tid AS xtid, '' AS comm, toInt64(-1) AS crank, "
																																																																															     "toInt64(-1) AS cnranks, toInt64(-1) AS entered, argMin(name, began) AS fn, "
																																																																															     "toInt64(min(began)) AS entered_ts, toUInt8(1) AS entered_open, toInt64(-1) AS nbytes, "
																																																																															     "toInt64(-1) AS lft, toInt64(0) AS lft_ts FROM (SELECT *, " CH_BEGAN
																																																																															     " AS began "
																																																																															     "FROM (" CH_BEGAN_ROWS(
																																																																																     CH_API_KINDS
																																																																																     " AND " CH_HAS("in_flight") " AND NOT (kind = "
																																																																																				 "'nccl_api' AND " CH_HAS(
																																																																																					 "seq") ")") ")) GROUP BY file_id, file, pid, tid)) AS lhs "
																																																																																						     "ANY LEFT JOIN (" CH_THREAD_NS
																																																																																						     ") AS jh5 USING file_id, file, pid, tid "
																																																																																						     "ORDER BY what, file, pid, comm FORMAT TabSeparated",
	.needs =
		"blas_api,cublas_api,cuda_api,cudnn_api,nccl_api", /* the collectives and the calls in flight */
};

static const struct ch_report *const nccl_sql_reports[] = {
	&ch_nccl_sum,
	&ch_nccl_stragglers,
	&ch_nccl_rank_sum,
	NULL,
};

static const struct ch_report *const nccl_sql_inputs[] = {
	&ch_nccl_hang_state,
	NULL,
};

/* nccl's SQL (struct family.sql). */
const struct family_sql nccl_sql = {
	.reports = nccl_sql_reports,
	.inputs = nccl_sql_inputs,
};
