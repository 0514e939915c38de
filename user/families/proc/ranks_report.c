// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ranks report of a merged file (bpfsight merge, BS_REC_RANK): where each rank's records
 * came from and how its clock was aligned, also shown by `bpfsight info`.
 */
#include <stdlib.h>
#include "proc.h"
#include "table.h"
#include "trace_ranks.h"

static void *ranks_new(void)
{
	return calloc(1, 1); /* the model keeps the ranks */
}

static void ranks_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
}

static int ranks_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum {
		C_NS,
		C_RANK,
		C_NRANKS,
		C_PID,
		C_HOST,
		C_ALIGNED_BY,
		C_OFFSET,
		C_OFFSET_ERR,
		C_DRIFT_PPB,
		C_POINTS,
		C_RESIDUAL_RMS,
		C_RESIDUAL_MAX,
		C_FILE,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_NS] = { "ns", "NS", TABLE_U64 },
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_NRANKS] = { "nranks", "NRanks", TABLE_S64 },
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_HOST] = { "host", "Host", TABLE_STR },
		[C_ALIGNED_BY] = { "aligned_by", "Aligned By", TABLE_STR },
		[C_OFFSET] = { "offset_ns", "Clock Offset (ns)", TABLE_S64 },
		[C_OFFSET_ERR] = { "offset_err_ns", "+- (ns)", TABLE_U64 },
		[C_DRIFT_PPB] = { "drift_ppb", "Drift (ppb)", TABLE_S64 },
		[C_POINTS] = { "points", "Collectives Used", TABLE_U64 },
		[C_RESIDUAL_RMS] = { "residual_rms_ns", "Residual RMS (ns)", TABLE_U64 },
		[C_RESIDUAL_MAX] = { "residual_max_ns", "Residual Max (ns)", TABLE_U64 },
		[C_FILE] = { "file", "File", TABLE_STR },
	};
	const struct trace_ranks *ranks = trace_model__ranks(m);
	const struct trace_rank *r;
	__u32 i = 0;

	table__add_cols(t, cols, NCOLS);
	while ((r = trace_ranks__next(ranks, &i))) {
		table__row(t);
		table__set_u64(t, C_NS, r->r.ns);
		if (r->r.rank >= 0)
			table__set_s64(t, C_RANK, r->r.rank);
		if (r->r.nranks >= 0)
			table__set_s64(t, C_NRANKS, r->r.nranks);
		/* the pid as its host saw it (NS and File say which file's); 0: the file had no
		 * rank process */
		table__set_u64(t, C_PID, trace_ranks__host_pid(r->r.h.pid));
		table__set_str(t, C_HOST, r->host);
		table__set_str(t, C_ALIGNED_BY, trace_ranks__aligned_by(r->r.flags));
		table__set_s64(t, C_OFFSET, r->r.offset_ns);
		table__set_u64(t, C_OFFSET_ERR, r->r.offset_err_ns);
		table__set_s64(t, C_DRIFT_PPB, r->r.drift_ppb);
		table__set_u64(t, C_POINTS, r->r.points);
		table__set_u64(t, C_RESIDUAL_RMS, r->r.residual_rms_ns);
		table__set_u64(t, C_RESIDUAL_MAX, r->r.residual_max_ns);
		table__set_str(t, C_FILE, r->path);
	}
	return table__err(t);
}

static void ranks_free(void *st)
{
	free(st);
}

const struct report ranks_report = {
	.name = "ranks",
	.desc = "Ranks of a merged file (bpfsight merge): origin and clock alignment",
	.new = ranks_new,
	.add = ranks_add,
	.emit = ranks_emit,
	.free = ranks_free,
	.info = &(const struct report_info){ "ranks (bpfsight merge)", "ranks" },
};
