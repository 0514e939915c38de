// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's inputs as SQL (ch_verdict.h), in what ClickHouse 18.16 runs. A whole file's
 * rows (its window, its names) are taken for every file the filtered rows come from.
 */
#include <string.h>
#include "ch_verdict.h"
#include "ch_sql.h"

/* The files the filtered rows come from. */
#define CH_FILES_OF_ROWS "file_id IN (SELECT file_id FROM " CH_DB ".events WHERE {W})"

static const struct ch_col ch_span_cols[] = {
	{ "start", "Start", 's' },
	{ "end", "End", 's' },
	{ "first", "First", 's' },
	{ "last", "Last", 's' },
	{ "files", "Files", 'u' },
	{ "families", "Families", 't' },
	{},
};

const struct ch_report ch_verdict_span = {
	.name = "verdict_span",
	.cols = ch_span_cols,
	.sql = "SELECT min(ts), max(visitParamExtractInt(args, 'end_ts')), "
	       "min(visitParamExtractInt(args, 'first_ts')), "
	       "max(visitParamExtractInt(args, 'last_ts')), count(), "
	       "arrayStringConcat(groupUniqArray(visitParamExtractString(args, 'families')), ',') FROM " CH_DB
	       ".events "
	       "WHERE {J} AND kind = 'trace_window' AND " CH_FILES_OF_ROWS " FORMAT TabSeparated",
};

static const struct ch_col ch_names_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "process", "Process", 't' },
	{ "thread", "Thread", 't' },
	{ "pool", "Pool", 't' },
	{ "owner", "Owner", 'u' },
	{ "owner_what", "Owner's Part", 't' },
	{},
};

const struct ch_report ch_verdict_names = {
	.name = "verdict_names",
	.cols = ch_names_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", if(position(args, '\"process\":') > 0, "
		       "visitParamExtractString(args, 'process'), NULL), "
		       "if(position(args, '\"thread\":') > 0, visitParamExtractString(args, 'thread'), "
		       "NULL), " CH_STR_OR_NULL(
			       "args",
			       "pool") ", if(position(args, '\"owner\":') > 0, "
				       "visitParamExtractUInt(args, 'owner'), NULL), " CH_STR_OR_NULL(
					       "args",
					       "owner_what") " FROM (SELECT pid, tid, args, " CH_NAMES_NS
							     " AS ns "
							     "FROM " CH_DB
							     ".events WHERE {J} AND kind = 'thread_names' AND " CH_FILES_OF_ROWS
							     ") FORMAT TabSeparated",
};

static const struct ch_col ch_lives_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "born", "Born", 's' },
	{ "died", "Died", 's' },
	{},
};

/* verdict__observe's: a fork's child born at the last fork of it, a thread dead at its last exit. */
const struct ch_report ch_verdict_lives = {
	.name = "verdict_lives",
	.cols = ch_lives_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", born, died FROM (SELECT file_id, "
		       "file, xpid AS pid, xtid AS tid, born, died FROM (SELECT file_id, file, " CH_GIL_TASK("pid") " AS xpid, " CH_GIL_TASK(
			       "tid") " AS xtid, "
				      "if(countIf(kind = 'fork') > 0, argMaxIf(ts, seq, kind = 'fork'), 0) AS born, "
				      "if(countIf(kind = 'exit') > 0, argMaxIf(ts, seq, kind = 'exit'), 0) AS died "
				      "FROM " CH_DB
				      ".events WHERE {W} AND kind IN ('fork', 'exit') "
				      "GROUP BY file_id, file, xpid, xtid)) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
				      ") AS jv1 USING file_id, file, pid, tid FORMAT TabSeparated",
};

static const struct ch_col ch_kinds_cols[] = {
	{ "kind", "Kind", 't' },
	{ "count", "Rows", 'u' },
	{},
};

const struct ch_report ch_verdict_kinds = {
	.name = "verdict_kinds",
	.cols = ch_kinds_cols,
	.sql = "SELECT kind, count() FROM " CH_DB ".events WHERE {W} GROUP BY kind ORDER BY kind "
	       "FORMAT TabSeparated",
};

static const struct ch_col ch_losses_cols[] = {
	{ "family", "Family", 't' },
	{ "cause", "Cause", 't' },
	{ "count", "Lost", 'u' },
	{},
};

/*
 * The events lost while recording (the `loss` rows: trace_walk.c's counts by family and
 * cause, a cause this bpfsight does not know "unknown"), in the order first recorded.
 */
const struct ch_report ch_verdict_losses = {
	.name = "verdict_losses",
	.cols = ch_losses_cols,
	.sql = "SELECT fam, cause, sum(visitParamExtractUInt(args, 'count')) FROM (SELECT file, seq, "
	       "args, visitParamExtractString(args, 'family') AS fam, if(startsWith(name, "
	       "'cause_'), 'unknown', name) AS cause FROM " CH_DB ".events WHERE {W} AND kind = "
	       "'loss') GROUP BY fam, cause ORDER BY min(file), min(seq) FORMAT TabSeparated",
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

/* cuda's rule (cuda_verdict.c) per thread and function: its calls' time, and theirs that
 * returned 0 (the rule sorts the functions into waits and launches by its own table). */
static const struct ch_col ch_cuda_calls_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "name", "Name", 't' },
	{ "total_ns", "Total (ns)", 'u' },
	{ "ok_ns", "OK (ns)", 'u' },
	{ "ok_count", "OK Calls", 'u' },
	{},
};

static const struct ch_report ch_cuda_thread_calls = {
	.name = "cuda_thread_calls",
	.cols = ch_cuda_calls_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", name, total_ns, ok_ns, ok_count FROM (SELECT file_id, file, pid, tid, name, "
		       "sum(dur) AS total_ns, sumIf(dur, visitParamExtractInt(args, 'ret') = 0) AS ok_ns, "
		       "countIf(visitParamExtractInt(args, 'ret') = 0) AS ok_count FROM " CH_DB
		       ".events WHERE {W} AND " CH_API_ROWS(
			       "cuda_api") " GROUP BY file_id, file, pid, tid, name) AS lhs "
					   "ANY LEFT JOIN (" CH_THREAD_NS
					   ") AS jv3 USING file_id, file, pid, tid FORMAT TabSeparated",
	.needs = "cuda_api", /* the calls by thread */
};

/*
 * gpu's rule (gpu_verdict.c) per process and device, what gpu_idle_sum's sweep finds of its
 * kernels, copies and memsets: the span from the first start to the last end, the time some
 * ran (the union of their intervals), and the idle gaps between (how many, of 1 ms or more,
 * the idle in those under it, the longest); an operation CUPTI could not time (its start 0:
 * the row's ts its file's clock_shift) left out, as there. The sweep without a running max (18.16 has no
 * arrayFold): each start +1 and end -1 sorted by time, a start before an end at the same time
 * (touching intervals are one stretch), the running count's zeros the gaps. No lambda reads
 * an array by index: 18.16 copies a captured array per element (n^2 memory).
 */
static const struct ch_col ch_gpu_devs_cols[] = {
	{ "pid", "PID", 'u' },
	{ "device", "Device", 'u' },
	{ "ops", "GPU Ops", 'u' },
	{ "span_ns", "Span (ns)", 'u' },
	{ "busy_ns", "Busy (ns)", 'u' },
	{ "gaps", "Gaps", 'u' },
	{ "gaps_1ms", "Gaps >= 1 ms", 'u' },
	{ "short_idle_ns", "Idle in Gaps < 1 ms (ns)", 'u' },
	{ "max_gap_ns", "Max Gap (ns)", 'u' },
	{},
};

static const struct ch_report ch_gpu_idle_devs = {
	.name = "gpu_idle_devs",
	.cols = ch_gpu_devs_cols,
	.sql = "SELECT fpid, device, ops, span, busy, length(gapv), "
	       "arrayCount(x -> x >= 1000000, gapv), arraySum(arrayFilter(x -> x < 1000000, gapv)), "
	       "arrayReduce('max', gapv) FROM (SELECT fpid, device, count() AS ops, "
	       "min(ts) AS base, max(ts + toInt64(dur)) - base AS span, "
	       "arraySort(arrayConcat(arrayMap(x -> (x - base) * 2, groupArray(ts)), "
	       "arrayMap(x -> (x - base) * 2 + 1, groupArray(ts + toInt64(dur))))) AS keys, "
	       "arrayMap(k -> intDiv(k, 2), keys) AS tm, "
	       "arrayCumSum(arrayMap(k -> if(k % 2 = 0, 1, -1), keys)) AS c, "
	       "arrayMap((a, b) -> b - a, arraySlice(tm, 1, length(tm) - 1), arraySlice(tm, 2)) "
	       "AS d, arraySlice(c, 1, length(c) - 1) AS c0, "
	       "arraySum(arrayMap((x, y) -> if(y > 0, x, 0), d, c0)) AS busy, "
	       "arrayFilter((x, y) -> y = 0, d, c0) AS gapv FROM (SELECT " CH_NS_ID(
		       "pid") " AS fpid, visitParamExtractUInt(args, 'device') AS device, ts, dur "
			      "FROM (SELECT * FROM (SELECT file_id, file, pid, tid, args, ts, dur "
			      "FROM " CH_DB ".events WHERE {W} AND kind IN ('gpu_kernel', "
			      "'gpu_memcpy', 'gpu_memset')) AS lhs ANY LEFT JOIN (SELECT file_id, "
			      "visitParamExtractInt(args, 'clock_shift') AS shift FROM " CH_DB
			      ".events WHERE {J} AND kind = 'trace_window') AS jv4 USING file_id "
			      "WHERE ts != shift) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
			      ") AS jv5 USING file_id, file, pid, tid) GROUP BY fpid, device) "
			      "ORDER BY fpid, device FORMAT TabSeparated",
	.needs = "gpu_kernel,gpu_memcpy,gpu_memset", /* the GPU work by device */
};

/*
 * The launch-bound claim's detail (gpu_verdict.c), what cuda_kern_exec_sum's rows add up to:
 * the kernels, their time, and for those whose launching call is in the rows (the cuda call,
 * or CUPTI's API record, as the kernel's link says, that starts at its call_ts on its thread:
 * a monotonic time, on the wall clock by its file's clock_shift) that call's time and the
 * kernel's wait in the queue after it returned.
 */
static const struct ch_col ch_launch_cols[] = {
	{ "kernels", "Kernels", 'u' },
	{ "kernel_ns", "Kernel (ns)", 'u' },
	{ "api_ns", "API (ns)", 'u' },
	{ "queue_ns", "Queue (ns)", 'u' },
	{},
};

static const struct ch_report ch_gpu_launch_totals = {
	.name = "gpu_launch_totals",
	.cols = ch_launch_cols,
	.sql = "SELECT count(), sum(kdur), sum(if(found = 1, cdur, 0)), "
	       "sum(if(found = 1 AND kts > cts + toInt64(cdur), kts - cts - toInt64(cdur), 0)) "
	       "FROM (SELECT * FROM (SELECT file_id, pid, tid, ts AS kts, dur AS kdur, link, "
	       "toInt64(visitParamExtractUInt(args, 'call_ts')) + shift AS cts FROM (SELECT "
	       "file_id, pid, tid, ts, dur, args, visitParamExtractString(args, 'link') AS link "
	       "FROM " CH_DB
	       ".events WHERE {W} AND kind = 'gpu_kernel') AS lhs ANY LEFT JOIN (SELECT "
	       "file_id, visitParamExtractInt(args, 'clock_shift') AS shift FROM " CH_DB
	       ".events WHERE {J} AND kind = 'trace_window') AS jv6 USING file_id) AS lhs ANY LEFT JOIN "
	       "(SELECT file_id, pid, tid, ts AS cts, dur AS cdur, toUInt8(1) AS found, "
	       "if(kind = 'cuda_api', 'cuda', 'api') AS link FROM " CH_DB ".events WHERE {W} AND "
	       "kind IN ('cuda_api', 'gpu_api')) AS jv7 USING file_id, pid, tid, cts, link) "
	       "FORMAT TabSeparated",
};

static const struct ch_report *const ch_verdict_states[] = {
	&ch_osrt_thread_calls, &ch_cuda_thread_calls, &ch_gpu_idle_devs, &ch_gpu_launch_totals,
	&ch_torch_input_waits, &ch_blas_thread_gemms, &ch_gpum_devices,	 &ch_cpu_fault_procs,
	&ch_cublas_step_gemms, &ch_mem_ooms,	      &ch_mem_devices,	 NULL, /* one a line */
};

const struct ch_report *ch_verdict__state(const char *name)
{
	for (const struct ch_report *const *r = ch_verdict_states; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	for (const struct ch_report *const *r = ch_hang_states; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	return NULL;
}
