// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What cublas's low-MFU rule keeps of every record, as SQL in the server (stats --from's
 * verdict, docs/CLICKHOUSE.md).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "cublas.h"

/*
 * cublas's low-MFU rule (cublas_verdict.c), what gemm_step_sum's rows add up to: per
 * process and torch step (the `torch_step` rows: the steps service's default source) its
 * GEMMs at depth 0 with FLOPs, by data type and compute type (the rule's peak is its type's):
 * their count and FLOPs; a GEMM is a step's when it starts in it (a product of a process's
 * steps and its GEMMs, as the pass's loop). Without any step in the rows: one span from the
 * first GEMM's start to the last one's end, all the GEMMs in it (step 0). And a row (no GEMMs,
 * no time) per process with steps: the processes the rule's idle share is of. Each row with the
 * GPUs its file recorded (its `trace_window` row's `gpus`): the peak's model.
 */
static const struct ch_col ch_cublas_steps_cols[] = {
	{ "pid", "PID", 'u' },
	{ "by_step", "By Step", 'u' },
	{ "step_ts", "Step Start", 's' },
	{ "step_ns", "Step Time (ns)", 'u' },
	{ "a_type", "A Type", 't' },
	{ "compute_type", "Compute Type", 't' },
	{ "gemms", "GEMMs", 'u' },
	{ "flops", "FLOPs", 'u' },
	{ "gpus", "GPUs", 't' },
	{},
};

/* The GEMMs the rule counts: their file, process, start, end, types and FLOPs. */
#define CH_STEP_GEMMS                                                                              \
	"SELECT file_id, pid, ts AS gts, ts + toInt64(dur) AS gend, "                              \
	"visitParamExtractString(args, 'a_type') AS atype, visitParamExtractString(args, "         \
	"'compute_type') AS ctype, visitParamExtractUInt(args, 'flops') AS flops FROM " CH_DB      \
	".events WHERE {W} AND kind = 'cublas_api' AND position(args, '\"depth\":') = 0 AND "      \
	"visitParamExtractUInt(args, 'flops') > 0"
/* Each file's GPUs, "" for none. */
#define CH_FILE_GPUS                                                                               \
	"SELECT file_id, visitParamExtractString(args, 'gpus') AS gpus FROM " CH_DB                \
	".events WHERE {J} AND kind = 'trace_window'"
#define CH_NO_STEPS                                                                                \
	CH_SCALAR("SELECT count() FROM " CH_DB ".events WHERE {W} AND kind = 'torch_step'") " = 0"

/* The steps part: each step's GEMMs by type. */
#define CH_STEPS_PART                                                                                             \
	"SELECT " CH_NS_ID(                                                                                       \
		"pid") " AS xpid, toUInt8(1) AS by_step, toInt64(sts) AS sts, "                                   \
		       "toUInt64(sdur) AS sns, atype, ctype, toUInt64(count()) AS n, toUInt64(sum(flops)) AS f, " \
		       "gpus FROM (SELECT * FROM (SELECT * FROM (SELECT file_id, file, pid, tid, ts AS sts, dur " \
		       "AS sdur FROM " CH_DB                                                                      \
		       ".events WHERE {W} AND kind = 'torch_step' AND dur > 0) AS lhs ALL INNER "                 \
		       "JOIN (" CH_STEP_GEMMS                                                                     \
		       ") AS jf6 USING file_id, pid WHERE gts >= sts AND gts < sts + "                            \
		       "toInt64(sdur)) AS lhs ANY LEFT JOIN (" CH_FILE_GPUS                                       \
		       ") AS jf7 USING file_id) AS lhs ANY LEFT JOIN "                                            \
		       "(" CH_THREAD_NS                                                                           \
		       ") AS jf8 USING file_id, file, pid, tid GROUP BY file_id, xpid, sts, sns, "                \
		       "atype, ctype, gpus"
/* Without steps: every GEMM in one span, from the first's start to the last one's end. */
#define CH_SPAN_PART                                                                                              \
	"SELECT " CH_NS_ID(                                                                                       \
		"pid") " AS apid, toUInt8(0), toInt64(lo), toUInt64(hi - lo), atype, "                            \
		       "ctype, toUInt64(count()), toUInt64(sum(flops)), any(gpus) FROM (SELECT * FROM (SELECT * " \
		       "FROM (" CH_STEP_GEMMS ") AS lhs ANY LEFT JOIN (" CH_FILE_GPUS                             \
		       ") AS jf9 USING file_id) AS lhs ANY LEFT JOIN "                                            \
		       "(" CH_PROC_NS ") AS jf10 USING file_id, pid) AS lhs CROSS JOIN (SELECT "                  \
		       "min(gts) AS lo, max(gend) AS hi FROM (" CH_STEP_GEMMS                                     \
		       ")) AS jf11 WHERE " CH_NO_STEPS " GROUP BY apid, lo, hi, atype, ctype"
/* Each process with steps, its steps' GEMMs or none. */
#define CH_STEP_PROCS_PART                                                                                        \
	"SELECT " CH_NS_ID(                                                                                       \
		"pid") ", toUInt8(1), toInt64(0), toUInt64(0), '', '', toUInt64(0), "                             \
		       "toUInt64(0), '' FROM (SELECT * FROM (SELECT DISTINCT file_id, file, pid, tid FROM " CH_DB \
		       ".events WHERE {W} AND kind = 'torch_step') AS lhs ANY LEFT JOIN (" CH_THREAD_NS           \
		       ") AS jf12 USING file_id, file, pid, tid)"

static const struct ch_report ch_cublas_step_gemms = {
	.name = "cublas_step_gemms",
	.cols = ch_cublas_steps_cols,
	.sql = "SELECT * FROM (" CH_STEPS_PART " UNION ALL " CH_SPAN_PART
	       " UNION ALL " CH_STEP_PROCS_PART ") ORDER BY by_step DESC, xpid, sts, atype, ctype "
	       "FORMAT TabSeparated",
	.needs = "cublas_api,torch_step", /* the GEMMs, the steps */
};

static const struct ch_report *const cublas_sql_inputs[] = {
	&ch_cublas_step_gemms,
	NULL,
};

/* cublas's SQL (struct family.sql). */
const struct family_sql cublas_sql = {
	.inputs = cublas_sql_inputs,
};
