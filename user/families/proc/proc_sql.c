// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * proc's reports and rules' inputs as SQL in the server (stats --from, docs/CLICKHOUSE.md):
 * ranks (ranks_report.c's: a merged file's RANK records), rank_waits (rank_waits_report.c's:
 * each rank's main thread's time waiting in collectives, by the call and line its stack is
 * in), the snapshots of the job's threads (verdict_snaps: a trigger's or the edges',
 * snap_records.h's) and what the edges' rules keep of every record (open_at_edges_state).
 *
 * The rank reports' SQL is laid out a clause a line, by hand.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "proc.h"

/* clang-format off */

/* ranks_report.c: a merged file's RANK records (`rank` rows), in the file's order. */
static const struct ch_col ch_ranks_cols[] = {
	{ "ns", "NS", 'u' },
	{ "rank", "Rank", 's' },
	{ "nranks", "NRanks", 's' },
	{ "pid", "PID", 'u' },
	{ "host", "Host", 't' },
	{ "aligned_by", "Aligned By", 't' },
	{ "offset_ns", "Clock Offset (ns)", 's' },
	{ "offset_err_ns", "+- (ns)", 'u' },
	{ "drift_ppb", "Drift (ppb)", 's' },
	{ "points", "Collectives Used", 'u' },
	{ "residual_rms_ns", "Residual RMS (ns)", 'u' },
	{ "residual_max_ns", "Residual Max (ns)", 'u' },
	{ "file", "File", 't' },
	{},
};

static const struct ch_report ch_ranks = {
	.name = "ranks",
	.cols = ch_ranks_cols,
	.sql = "SELECT " CH_ARG_U("ns") ", "
	       "if(" CH_ARG_S("rank") " >= 0, " CH_ARG_S("rank") ", NULL), "
	       "if(" CH_ARG_S("nranks") " >= 0, " CH_ARG_S("nranks") ", NULL), "
	       /* the pid as its host saw it, less the rank namespace (ranks_report.c) */
	       CH_HOST_ID(CH_ARG_U("pid")) ", "
	       "if(position(args, '\"host\":') > 0, visitParamExtractString(args, 'host'), NULL), "
	       "visitParamExtractString(args, 'aligned_by'), "
	       CH_ARG_S("offset_ns") ", " CH_ARG_U("offset_err_ns") ", " CH_ARG_S("drift_ppb") ", "
	       CH_ARG_U("points") ", " CH_ARG_U("residual_rms_ns") ", "
	       CH_ARG_U("residual_max_ns") ", "
	       "file "
	       "FROM " CH_DB ".events WHERE {W} AND kind = 'rank' "
	       "ORDER BY file_id, " CH_ARG_U("index") " FORMAT TabSeparated",
};

/*
 * rank_waits_report.c: each rank of the job (a process snapshot's RANK, else LOCAL_RANK: the
 * end's, else the start's, else a trigger's), its main thread's off-CPU time with a stack,
 * split by its `stack` row's call (an NCCL function, torch.distributed's: in a collective)
 * and line of the job's code (`own`, shipped with the stack); the largest elsewhere by stack,
 * as the report keys it; its life within the recording (its fork, its exit, the window).
 */
#define CH_WAIT_ROWS \
	"SELECT file_id, file, pid, sid, call, " \
	       "substring(call, 1, 4) = 'nccl' OR substring(call, 1, 17) = 'torch.distributed' " \
	       "AS coll, sum(dur) AS t, count() AS n, min(seq) AS mseq, any(own) AS sown " \
	"FROM (SELECT file_id, file, pid, seq, dur, " CH_ARG_U("stack_id") " AS sid " \
	      "FROM " CH_DB ".events WHERE {W} AND kind = 'offcpu' AND pid = tid " \
	      "AND position(args, '\"stack_id\":') > 0) AS lhs " \
	"ANY LEFT JOIN (" \
		"SELECT file_id, " CH_ARG_U("stack_id") " AS sid, " \
		       "visitParamExtractString(args, 'call') AS call, " \
		       "visitParamExtractString(args, 'own') AS own " \
		"FROM " CH_DB ".events " \
		"WHERE {J} AND kind = 'stack' AND " CH_ARG_U("kernel") " = 0) AS jk5 " \
	"USING file_id, sid GROUP BY file_id, file, pid, sid, call"
#define CH_WAITS \
	"SELECT file_id, file, pid, sumIf(n, coll) AS waits, sumIf(t, coll) AS wait_ns, " \
	       "argMinIf(call, mseq, coll) AS call1, argMinIf(sown, mseq, coll) AS at1, " \
	       "maxIf(t, NOT coll AND sown != '') AS else_ns, " \
	       "argMaxIf(sown, t, NOT coll AND sown != '') AS else_at " \
	"FROM (" CH_WAIT_ROWS ") GROUP BY file_id, file, pid"
#define CH_RANK_OF \
	"if(position(args, '\"rank\":') > 0, " CH_ARG_S("rank") ", " \
	   "if(position(args, '\"local_rank\":') > 0, " CH_ARG_S("local_rank") ", -1))"
#define CH_EDGE "visitParamExtractString(args, 'edge')"
#define CH_SNAP_RANKS \
	"SELECT file_id, file, pid, argMin(rk, pri) AS rank " \
	"FROM (SELECT file_id, file, pid, " CH_RANK_OF " AS rk, " \
		     "bitOr(bitShiftLeft(toUInt64(multiIf(" CH_EDGE " = 'end', 0, " \
		     CH_EDGE " = 'start', 1, 2)), 40), seq) AS pri " \
	      "FROM " CH_DB ".events WHERE {W} AND kind = 'process_state') " \
	"WHERE rk >= 0 GROUP BY file_id, file, pid"
/* A main thread's fork and exit (a merged file's child ids with their rank namespace). */
#define CH_MAIN_LIVES \
	"SELECT file_id, file, xpid AS pid, has_born, born, has_died, died FROM (" \
		"SELECT file_id, file, " \
		       "if(kind = 'fork', " \
			  "toUInt32(bitAnd(" CH_ARG_U("child_pid") ", 4194303)), pid) " \
		       "AS xpid, countIf(kind = 'fork') > 0 AS has_born, " \
		       "argMaxIf(ts, seq, kind = 'fork') AS born, " \
		       "countIf(kind = 'exit') > 0 AS has_died, " \
		       "argMaxIf(ts, seq, kind = 'exit') AS died " \
		"FROM " CH_DB ".events " \
		"WHERE {J} AND ((kind = 'fork' AND " CH_ARG_U("child_pid") " = " \
		      CH_ARG_U("child_tid") ") OR (kind = 'exit' AND pid = tid)) " \
		"GROUP BY file_id, file, xpid)"
#define CH_WINDOW \
	"SELECT file_id, ts AS wstart, " \
	       "if(position(args, '\"end_ts\":') > 0, " CH_ARG_S("end_ts") ", 0) AS wend " \
	"FROM " CH_DB ".events WHERE {J} AND kind = 'trace_window'"

static const struct ch_col ch_rank_waits_cols[] = {
	{ "rank", "Rank", 's' },
	{ "pid", "PID", 'u' },
	{ "waits", "Waits", 'u' },
	{ "wait_ns", "In Collectives", 'u' },
	{ "life_ns", "Of Its Time", 'u' },
	{ "wait_pct", "Wait (%)", 'd' },
	{ "collective", "Collective", 't' },
	{ "at", "At", 't' },
	{ "elsewhere_ns", "Blocked Elsewhere", 'u' },
	{ "elsewhere_at", "Most At", 't' },
	{},
};

static const struct ch_report ch_rank_waits = {
	.name = "rank_waits",
	.cols = ch_rank_waits_cols,
	.sql = "SELECT rank, " CH_HOST_ID("fpid") ", waits, wait_ns, if(life > 0, life, NULL), "
	       "if(life > 0, wait_ns * 100 / life, NULL), if(call1 != '', call1, NULL), "
	       "if(call1 != '' AND at1 != '', at1, NULL), else_ns, "
	       "if(else_at != '', else_at, NULL) "
	       "FROM (SELECT *, " CH_RANK_NS_ID("pid") " AS fpid, "
		     "if(has_born AND born > wstart, born, wstart) AS b, "
		     "if(has_died AND died != 0, died, wend) AS e, "
		     "toUInt64(if(e > b, e - b, 0)) AS life "
	       "FROM (SELECT * FROM (SELECT * FROM (SELECT * FROM (" CH_SNAP_RANKS ") AS lhs "
				"ANY LEFT JOIN (" CH_WAITS ") AS jk6 USING file_id, file, pid) AS lhs "
				    "ANY LEFT JOIN (" CH_MAIN_LIVES ") AS jk7 USING file_id, file, pid) AS lhs "
		     "ANY LEFT JOIN (" CH_WINDOW ") AS jk8 USING file_id) AS lhs "
	       "ANY LEFT JOIN (" CH_RANK_NS ") AS jk9 USING file_id, file) "
	       "ORDER BY rank, fpid FORMAT TabSeparated",
	.needs = "process_state", /* the ranks its process snapshots say */
};

/* clang-format on */

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
static const struct ch_report ch_verdict_snaps = {
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
 * ledger_rows.c's rows: each file's critical unit (`unit`), its entries (`entry`, the largest
 * first) and its threads' time waiting for a DataLoader's batch (`input`), with the files'
 * rank namespaces (the waker's too); stats --from's verdict takes the unit of the largest
 * weight among the files' (docs/CLICKHOUSE.md, "Where it can differ").
 */
static const struct ch_col ch_ledger_cols[] = {
	{ "file_id", "File", 't' },
	{ "row", "Row", 't' },
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "name", "Name", 't' },
	{ "i", "I", 'u' },
	{ "threads", "Threads", 'u' },
	{ "total_ns", "Total (ns)", 'u' },
	{ "job_threads", "Job Threads", 'u' },
	{ "cpus", "CPUs", 'u' },
	{ "score", "Score", 'u' },
	{ "entry", "Entry", 't' },
	{ "where", "Where", 't' },
	{ "inside", "Inside", 't' },
	{ "ns", "Time (ns)", 'u' },
	{ "oncpu_ns", "On CPU (ns)", 'u' },
	{ "runnable_ns", "Runnable (ns)", 'u' },
	{ "own_ns", "Own (ns)", 'u' },
	{ "waker", "Waker", 'u' },
	{ "waker_ns", "Waker's (ns)", 'u' },
	{ "waker_where", "Waker Where", 't' },
	{ "idle", "Idle", 'u' },
	{ "own", "Own", 'u' },
	{},
};

static const struct ch_report ch_verdict_ledger = {
	.name = "verdict_ledger",
	.cols = ch_ledger_cols,
	.sql = "SELECT file_id, substring(kind, 8), " CH_NS_ID("pid") ", " CH_NS_ID("tid") ", name, " CH_ARG_U("i") ", " CH_ARG_U("threads") ", " CH_ARG_U("total_ns") ", " CH_ARG_U("job_threads") ", " CH_ARG_U("cpus") ", " CH_ARG_U(
		"score") ", "
			 "visitParamExtractString(args, 'entry'), visitParamExtractString(args, 'where'), "
			 "visitParamExtractString(args, 'inside'), " CH_ARG_U("ns") ", " CH_ARG_U("oncpu_ns") ", " CH_ARG_U("runnable_ns") ", " CH_ARG_U(
				 "own_ns") ", "
					   "if(" CH_ARG_U("waker") " > 0, " CH_NS_ID(CH_ARG_U("waker")) ", 0), " CH_ARG_U("waker_ns") ", visitParamExtractString(args, 'waker_where'), " CH_ARG_U(
						   "idle") ", " CH_ARG_U("own") " "
										"FROM (SELECT file_id, file, seq, pid, tid, kind, name, args FROM " CH_DB
										".events "
										"WHERE {W} AND kind IN ('ledger_unit', 'ledger_entry', 'ledger_input')) AS lhs "
										"ANY LEFT JOIN (" CH_THREAD_NS
										") AS jl1 USING file_id, file, pid, tid "
										"ORDER BY file, seq FORMAT TabSeparated",
	.needs = "ledger_unit",
};

static const struct ch_report *const proc_sql_reports[] = {
	&ch_ranks,
	&ch_rank_waits,
	NULL,
};

static const struct ch_report *const proc_sql_inputs[] = {
	&ch_verdict_snaps,
	&ch_open_at_edges_state,
	&ch_verdict_ledger,
	NULL,
};

/* proc's SQL (struct family.sql). */
const struct family_sql proc_sql = {
	.reports = proc_sql_reports,
	.inputs = proc_sql_inputs,
};
