// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The state the rules of torch, mem, cublas, blas and gpumetrics keep over every record
 * (their struct family_verdict's ADD), as SQL in what ClickHouse 18.16 runs (ch_verdict.h):
 * what stats --from's verdict loads in its place.
 */
#include "ch_sql.h"
#include "ch_verdict.h"

/*
 * torch's input-bound rule (torch_input_verdict.c): the off-CPU time (rows with a stack) and
 * CPU samples per thread and stack, with what the rule reads of the stack (its row's args:
 * `loader`, in the DataLoader's __next__; `own`, its line in the job's own code; a worker's
 * `wfunc` and `wsite`); the rule sorts them into a trainer's waits and its workers' time by
 * the workers the names say. A stack's user row (kernel 0) where it has one: `own` is on it.
 */
static const struct ch_col ch_torch_input_cols[] = {
	{ "pid", "PID", 'u' },		 { "tid", "TID", 'u' },
	{ "sample", "CPU Sample", 'u' }, { "loader", "In DataLoader", 'u' },
	{ "own", "Own Line", 't' },	 { "wfunc", "Worker Function", 't' },
	{ "wsite", "Worker Site", 't' }, { "ns", "Off-CPU (ns)", 'u' },
	{ "count", "Count", 'u' },	 {},
};

const struct ch_report ch_torch_input_waits = {
	.name = "torch_input_waits",
	.cols = ch_torch_input_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", sample, loader, own, wfunc, wsite, offns, cnt FROM (SELECT * FROM (SELECT "
		       "file_id, file, pid, tid, toUInt8(kind = 'cpu_sample') AS sample, "
		       "visitParamExtractUInt(args, 'stack_id') AS stack_id, sum(dur) AS offns, "
		       "count() AS cnt FROM " CH_DB ".events WHERE {W} AND ((kind = 'offcpu' AND "
		       "position(args, '\"stack_id\":') > 0) OR kind = 'cpu_sample') GROUP BY file_id, "
		       "file, pid, tid, sample, stack_id) ANY INNER JOIN (SELECT file_id, stack_id, "
		       "visitParamExtractUInt(sargs, 'loader') AS loader, " CH_STR_OR_NULL("sargs", "own") " AS own, " CH_STR_OR_NULL(
			       "sargs",
			       "wfunc") " AS wfunc, " CH_STR_OR_NULL("sargs",
								     "wsite") " AS wsite "
									      "FROM (SELECT file_id, "
									      "visitParamExtractUInt(args, "
									      "'stack_id') AS stack_id, "
									      "argMin(args, "
									      "visitParamExtractInt(args, "
									      "'kernel')) AS sargs FROM " CH_DB
									      ".events WHERE {J} AND kind = "
									      "'stack' GROUP BY file_id, "
									      "stack_id) WHERE "
									      "position(sargs, '\"loader\":') > 0 OR "
									      "position(sargs, '\"wsite\":') > 0) "
									      "USING file_id, stack_id) ANY LEFT JOIN (" CH_THREAD_NS
									      ") USING file_id, file, pid, tid "
									      "FORMAT TabSeparated",
};

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

const struct ch_report ch_blas_thread_gemms = {
	.name = "blas_thread_gemms",
	.cols = ch_blas_gemms_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", gns, gflops, cnt, lib FROM (SELECT * FROM (SELECT file_id, file, pid, tid, "
		       "sum(dur) AS gns, sum(visitParamExtractUInt(args, 'flops')) AS gflops, count() "
		       "AS cnt FROM " CH_DB ".events WHERE {W} AND kind = 'blas_api' AND "
		       "position(args, '\"depth\":') = 0 AND position(args, '\"flops\":') > 0 GROUP BY "
		       "file_id, file, pid, tid) ANY LEFT JOIN (SELECT file_id, pid, "
		       "any(visitParamExtractString(args, 'blas_library')) AS lib FROM " CH_DB
		       ".events WHERE {J} AND kind = 'thread_names' AND position(args, "
		       "'\"blas_library\":') > 0 GROUP BY file_id, pid) USING file_id, pid) ANY LEFT "
		       "JOIN (" CH_THREAD_NS ") USING file_id, file, pid, tid FORMAT TabSeparated",
};
