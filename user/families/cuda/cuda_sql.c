// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda's reports and rules' inputs as SQL in the server (stats --from, docs/CLICKHOUSE.md):
 * cuda_api_sum (cuda_report.c's, nsys's API summary), and what cuda's rule (cuda_verdict.c)
 * keeps of every call, per thread and function (cuda_thread_calls).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "cuda.h"

static const struct ch_report ch_cuda_api_sum = {
	.name = "cuda_api_sum",
	.cols = ch_time_cols,
	.sql = CH_TIME_SUM(CH_API_ROWS("cuda_api")),
	.needs = "cuda_api", /* its rows by name: none without a call */
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

static const struct ch_report *const cuda_sql_reports[] = {
	&ch_cuda_api_sum,
	NULL,
};

static const struct ch_report *const cuda_sql_inputs[] = {
	&ch_cuda_thread_calls,
	NULL,
};

/* cuda's SQL (struct family.sql). */
const struct family_sql cuda_sql = {
	.reports = cuda_sql_reports,
	.inputs = cuda_sql_inputs,
};
