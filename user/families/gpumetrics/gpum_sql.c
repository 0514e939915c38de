// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What gpumetrics's rules keep of every sample, as SQL in the server (stats --from's verdict,
 * docs/CLICKHOUSE.md).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "gpumetrics.h"

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

/* A metric's count and sum over the rows that have it. */
#define CH_METRIC(key, as)                                                                         \
	"countIf(" CH_HAS(key) ") AS " as "_n, sumIf(visitParamExtractFloat(args, '" key           \
			       "'), " CH_HAS(key) ") AS " as "_sum, "
/* The throttle bits of a row: its hex string's digits, last first. */
#define CH_THROTTLE_BITS                                                                             \
	"arraySum(arrayMap(i -> bitShiftLeft(toUInt64(position('0123456789abcdef', lower(substring(" \
	"h, length(h) - i, 1))) - 1), 4 * i), range(toUInt64(greatest(length(h), 2) - 2))))"

static const struct ch_report ch_gpum_devices = {
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

static const struct ch_report *const gpumetrics_sql_inputs[] = {
	&ch_gpum_devices,
	NULL,
};

/* gpumetrics's SQL (struct family.sql). */
const struct family_sql gpumetrics_sql = {
	.inputs = gpumetrics_sql_inputs,
};
