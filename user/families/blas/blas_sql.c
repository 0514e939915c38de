// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What blas's rule keeps of every record, as SQL in the server (stats --from's verdict,
 * docs/CLICKHOUSE.md).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "blas.h"

/*
 * blas's rule (blas_verdict.c) per thread: its GEMMs' time, FLOPs and count (the calls no
 * traced call made, with FLOPs: the decoder says them when m, n and k are known), and the
 * library its process's GEMMs ran in (its threads' names' rows carry it).
 */
static const struct ch_col ch_blas_gemms_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "ns", "GEMM (ns)", 'u' },
	{ "flops", "FLOPs", 'u' },
	{ "count", "GEMMs", 'u' },
	{ "library", "Library", 't' },
	{},
};

static const struct ch_report ch_blas_thread_gemms = {
	.name = "blas_thread_gemms",
	.cols = ch_blas_gemms_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", gns, gflops, cnt, lib FROM (SELECT * FROM (SELECT file_id, file, pid, tid, "
		       "sum(dur) AS gns, sum(visitParamExtractUInt(args, 'flops')) AS gflops, count() "
		       "AS cnt FROM " CH_DB ".events WHERE {W} AND kind = 'blas_api' AND "
		       "position(args, '\"depth\":') = 0 AND position(args, '\"flops\":') > 0 GROUP BY "
		       "file_id, file, pid, tid) AS lhs ANY LEFT JOIN (SELECT file_id, pid, "
		       "any(visitParamExtractString(args, 'blas_library')) AS lib FROM " CH_DB
		       ".events WHERE {J} AND kind = 'thread_names' AND position(args, "
		       "'\"blas_library\":') > 0 GROUP BY file_id, pid) AS jf3 USING file_id, pid) AS lhs ANY LEFT "
		       "JOIN (" CH_THREAD_NS
		       ") AS jf4 USING file_id, file, pid, tid FORMAT TabSeparated",
	.needs = "blas_api", /* the GEMMs by thread */
};

static const struct ch_report *const blas_sql_inputs[] = {
	&ch_blas_thread_gemms,
	NULL,
};

/* blas's SQL (struct family.sql). */
const struct family_sql blas_sql = {
	.inputs = blas_sql_inputs,
};
