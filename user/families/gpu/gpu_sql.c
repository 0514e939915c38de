// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What gpu's rules (gpu_verdict.c; cublas's MFU rule reads gpu_idle_devs too) keep of every
 * record, as SQL in the server (stats --from's verdict, docs/CLICKHOUSE.md): each device's
 * busy and idle time, and the launches' totals.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "gpu.h"

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

static const struct ch_report *const gpu_sql_inputs[] = {
	&ch_gpu_idle_devs,
	&ch_gpu_launch_totals,
	NULL,
};

/* gpu's SQL (struct family.sql). */
const struct family_sql gpu_sql = {
	.inputs = gpu_sql_inputs,
};
