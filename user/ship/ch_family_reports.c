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
		       "file, pid, tid, sample, stack_id) AS lhs ALL INNER JOIN (SELECT file_id, stack_id, "
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
									      "position(sargs, '\"wsite\":') > 0) AS jf1 "
									      "USING file_id, stack_id) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
									      ") AS jf2 USING file_id, file, pid, tid "
									      "FORMAT TabSeparated",
	.needs = "offcpu,cpu_sample", /* the waits and samples by stack */
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
		       "file_id, file, pid, tid) AS lhs ANY LEFT JOIN (SELECT file_id, pid, "
		       "any(visitParamExtractString(args, 'blas_library')) AS lib FROM " CH_DB
		       ".events WHERE {J} AND kind = 'thread_names' AND position(args, "
		       "'\"blas_library\":') > 0 GROUP BY file_id, pid) AS jf3 USING file_id, pid) AS lhs ANY LEFT "
		       "JOIN (" CH_THREAD_NS
		       ") AS jf4 USING file_id, file, pid, tid FORMAT TabSeparated",
	.needs = "blas_api", /* the GEMMs by thread */
};

/*
 * gpumetrics's rules (gpum_verdict.c) per device, what gpu_metrics_sum's state holds for them:
 * the samples (`gpu_metrics` rows), the count and sum of the GR active, GPU utilization, DRAM
 * active and SM active values, and the time each throttle reason was held (each sample's
 * `throttle` bits, a hex string, held until the device's next sample with them, in the
 * file's order, when later by at most 2 s: gpum_sum_report.c's GPUM_SUM_GAP_NS), the time
 * covered and that with a reason that slows the clocks (GPUM_THROTTLE_SLOWING, 0xfc); its
 * model from its last `gpu_device` row.
 */
static const struct ch_col ch_gpum_devices_cols[] = {
	{ "device", "GPU", 'u' },
	{ "samples", "Samples", 'u' },
	{ "gr_n", "GR Active Samples", 'u' },
	{ "gr_sum", "GR Active Sum", 'd' },
	{ "util_n", "GPU Util Samples", 'u' },
	{ "util_sum", "GPU Util Sum", 'd' },
	{ "dram_n", "DRAM Active Samples", 'u' },
	{ "dram_sum", "DRAM Active Sum", 'd' },
	{ "sm_n", "SM Active Samples", 'u' },
	{ "sm_sum", "SM Active Sum", 'd' },
	{ "covered_ns", "Covered (ns)", 'u' },
	{ "slowed_ns", "Slowed (ns)", 'u' },
	{ "thr0_ns", "Reason 0 (ns)", 'u' },
	{ "thr1_ns", "Reason 1 (ns)", 'u' },
	{ "thr2_ns", "Reason 2 (ns)", 'u' },
	{ "thr3_ns", "Reason 3 (ns)", 'u' },
	{ "thr4_ns", "Reason 4 (ns)", 'u' },
	{ "thr5_ns", "Reason 5 (ns)", 'u' },
	{ "thr6_ns", "Reason 6 (ns)", 'u' },
	{ "thr7_ns", "Reason 7 (ns)", 'u' },
	{ "thr8_ns", "Reason 8 (ns)", 'u' },
	{ "model", "Model", 't' },
	{},
};

#define CH_HAS(key) "position(args, '\"" key "\":') > 0"
/* A metric's count and sum over the rows that have it. */
#define CH_METRIC(key, as)                                                                         \
	"countIf(" CH_HAS(key) ") AS " as "_n, sumIf(visitParamExtractFloat(args, '" key           \
			       "'), " CH_HAS(key) ") AS " as "_sum, "
/* The throttle bits of a row: its hex string's digits, last first. */
#define CH_THROTTLE_BITS                                                                             \
	"arraySum(arrayMap(i -> bitShiftLeft(toUInt64(position('0123456789abcdef', lower(substring(" \
	"h, length(h) - i, 1))) - 1), 4 * i), range(toUInt64(greatest(length(h), 2) - 2))))"

const struct ch_report ch_gpum_devices = {
	.name = "gpum_devices",
	.cols = ch_gpum_devices_cols,
	.sql = "SELECT device, samples, gr_n, gr_sum, util_n, util_sum, dram_n, dram_sum, sm_n, "
	       "sm_sum, arraySum(dt), arraySum(arrayMap((d, b) -> if(bitAnd(b, 252) != 0, d, 0), dt, "
	       "b0)), thr[1], thr[2], thr[3], thr[4], thr[5], thr[6], thr[7], thr[8], thr[9], model "
	       "FROM (SELECT file_id, device, count() AS samples, " CH_METRIC("gr_active", "gr")
		       CH_METRIC("gpu_util", "util") CH_METRIC("dram_active", "dram") CH_METRIC(
			       "sm_active",
			       "sm") "arraySort((t, s) -> s, groupArrayIf(ts, hasthr), groupArrayIf(seq, "
				     "hasthr)) AS tt, arraySort((b, s) -> s, groupArrayIf(bits, hasthr), "
				     "groupArrayIf(seq, hasthr)) AS bb, arrayMap((a, b) -> if(b > a AND b - "
				     "a <= 2000000000, b - a, 0), arraySlice(tt, 1, length(tt) - 1), "
				     "arraySlice(tt, 2)) AS dt, arraySlice(bb, 1, length(bb) - 1) AS b0, "
				     "arrayMap(k -> arraySum(arrayMap((d, b) -> if(bitAnd(b, "
				     "bitShiftLeft(toUInt64(1), k)) != 0, d, 0), dt, b0)), range(9)) AS thr "
				     "FROM (SELECT file_id, seq, ts, args, visitParamExtractUInt(args, "
				     "'device') AS device, " CH_HAS(
					     "throttle") " AS hasthr, visitParamExtractString(args, "
							 "'throttle') AS h, " CH_THROTTLE_BITS
							 " AS bits FROM " CH_DB
							 ".events WHERE {W} AND kind = 'gpu_metrics') "
							 "GROUP BY file_id, device) AS lhs ANY LEFT JOIN (SELECT "
							 "file_id, visitParamExtractUInt(args, 'device') AS "
							 "device, argMax(visitParamExtractString(args, "
							 "'model'), seq) AS model FROM " CH_DB
							 ".events WHERE {J} AND kind = 'gpu_device' GROUP BY "
							 "file_id, device) AS jf5 USING file_id, device ORDER BY "
							 "device, file_id FORMAT TabSeparated",
	.needs = "gpu_metrics", /* the samples by device */
};

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

const struct ch_report ch_cublas_step_gemms = {
	.name = "cublas_step_gemms",
	.cols = ch_cublas_steps_cols,
	.sql = "SELECT * FROM (" CH_STEPS_PART " UNION ALL " CH_SPAN_PART
	       " UNION ALL " CH_STEP_PROCS_PART ") ORDER BY by_step DESC, xpid, sts, atype, ctype "
	       "FORMAT TabSeparated",
	.needs = "cublas_api,torch_step", /* the GEMMs, the steps */
};
