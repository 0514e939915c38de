// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A hang's and the recording's edges' inputs as SQL (ch_verdict.h), in what ClickHouse 18.16
 * runs: the snapshots of the job's threads (the `process_state` and `thread_state` rows, a
 * trigger's or the edges'), what the edges' rules keep of every record (open_at_edges_state)
 * and each rank's collectives entered and left (nccl_hang_state). A handful of rows a thread.
 */
#include "ch_sql.h"
#include "ch_verdict.h"

/* A signed arg, -1 when the row has none. */
#define CH_INT_OR_NONE(key)                                                                        \
	"if(position(args, '\"" key "\":') > 0, visitParamExtractInt(args, '" key "'), -1)"
#define CH_HAS(key) "position(args, '\"" key "\":') > 0"

/* The uprobe-API families' call rows (struct family.api: proc_edges' and nccl_hang's calls). */
#define CH_API_KINDS "kind IN ('blas_api', 'cublas_api', 'cuda_api', 'cudnn_api', 'nccl_api')"

static const struct ch_col ch_snaps_cols[] = {
	{ "of_process", "Of Process", 'u' },
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "ts", "Taken", 's' },
	{ "edge", "Edge", 'u' },
	{ "rank", "Rank", 's' },
	{ "local_rank", "Local Rank", 's' },
	{ "world", "World", 's' },
	{ "state", "State", 'u' },
	{ "syscall", "Syscall", 't' },
	{ "syscall_nr", "Syscall Nr", 's' },
	{ "flags", "Flags", 'u' },
	{ "off_cpu_ns", "Off CPU (ns)", 'u' },
	{ "cpu_ns", "CPU (ns)", 'u' },
	{ "stack", "Stack", 'u' },
	{ "call", "Call", 't' },
	{ "where", "Where", 't' },
	{},
};

/*
 * The record a snapshot's row came from, as the reader keeps it (snap_records.h): the
 * process's environment and edge; the thread's task state, system call and BS_SNAP_* flags
 * read back from dump's words for them (thread_state__text's), its stack's `call` and line
 * (its `stack` row's, the `where` stack_call__where says, else `own`). In the files' order.
 */
const struct ch_report ch_verdict_snaps = {
	.name = "verdict_snaps",
	.cols = ch_snaps_cols,
	.sql = "SELECT proc, " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", ts, edge, env_rank, local_rank, world, state, sc, scnr, flags, off_cpu, cpu, "
		       "has_stack, in_call, at_line FROM (SELECT * FROM (SELECT * FROM (SELECT file_id, "
		       "file, seq, pid, tid, ts, toUInt8(kind = 'process_state') AS proc, "
		       "multiIf(visitParamExtractString(args, 'edge') = 'start', 64, "
		       "visitParamExtractString(args, 'edge') = 'end', 128, 0) AS edge, " CH_INT_OR_NONE("rank") " AS env_rank, " CH_INT_OR_NONE("local_rank") " AS local_rank, " CH_INT_OR_NONE(
			       "world_size") " AS world, "
					     "if(proc, 0, multiIf(name = 'runnable (waiting for a CPU)' OR name = 'exiting' OR "
					     "startsWith(name, 'running'), 0, name = 'stopped by a debugger', 8, "
					     "name = 'stopped', 4, startsWith(name, 'waiting (uninterruptible)'), 2, "
					     "1)) AS state, " CH_STR_OR_NULL("args", "syscall") " AS sc, " CH_INT_OR_NONE(
						     "syscall_nr") " AS scnr, "
								   "bitOr(bitOr(bitOr(if(startsWith(name, 'running') AND NOT proc, 1, 0), "
								   "if(name = 'running (in the kernel)', 4, 0)), bitOr(if(visitParamExtractString("
								   "args, 'read') = 'sample', 2, 0), if(visitParamExtractBool(args, 'gil') AND "
								   "NOT proc, 8, 0))), bitOr(bitOr(if(visitParamExtractBool(args, 'gil_wait'), 16, "
								   "0), if(name = 'exiting' AND NOT proc, 32, 0)), edge)) AS flags, "
								   "visitParamExtractUInt(args, 'off_cpu_ns') AS off_cpu, "
								   "visitParamExtractUInt(args, 'cpu_ns') AS cpu, "
								   "visitParamExtractUInt(args, 'stack_id') AS stack_id FROM " CH_DB
								   ".events WHERE {W} AND kind IN ('process_state', 'thread_state')) AS lhs "
								   "ANY LEFT JOIN (SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS "
								   "stack_id, toUInt8(1) AS has_stack, " CH_STR_OR_NULL(
									   "args",
									   "call") " AS in_call, "
										   "if(" CH_HAS(
											   "where") ", visitParamExtractString(args, 'where'), "
												    "if(" CH_HAS(
													    "own") ", visitParamExtractString(args, 'own'), "
														   "'code whose stack was not read')) AS at_line FROM " CH_DB
														   ".events WHERE {J} AND kind = 'stack' AND "
														   "visitParamExtractUInt(args, 'kernel') = 0) AS jh1 USING file_id, stack_id) AS lhs "
														   "ANY LEFT JOIN (" CH_THREAD_NS
														   ") AS jh2 USING file_id, file, pid, tid) ORDER BY file, seq "
														   "FORMAT TabSeparated",
	.needs = "process_state,thread_state", /* the snapshots */
};

/*
 * proc_edges.c's state: per thread its uprobe-API calls done (depth 0, returned), and the
 * calls in flight the rows hold (a hang trigger's dump whose calls in flight say nothing: the
 * ranks' stacks do).
 */
static const struct ch_col ch_edges_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "calls", "Calls Done", 'u' },
	{ "open", "In Flight", 'u' },
	{},
};

static const struct ch_report ch_open_at_edges_state = {
	.name = "open_at_edges_state",
	.cols = ch_edges_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", calls, open FROM (SELECT file_id, file, pid, tid, "
		       "countIf(NOT " CH_HAS("depth") " AND NOT " CH_HAS("in_flight") ") AS calls, countIf(" CH_HAS(
			       "in_flight") ") AS open FROM " CH_DB
					    ".events WHERE {W} AND " CH_API_KINDS
					    " GROUP BY file_id, file, pid, tid) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
					    ") AS jh3 USING file_id, file, pid, tid FORMAT TabSeparated",
	.needs = "blas_api,cublas_api,cuda_api,cudnn_api,nccl_api", /* the API calls by thread */
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

const struct ch_report *const ch_hang_states[] = {
	&ch_open_at_edges_state,
	&ch_nccl_hang_state,
	NULL,
};
