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
	const struct trace_ranks *ranks = trace_model__ranks(m);
	const struct trace_rank *r;
	__u32 i = 0;
	int c[13];

	c[0] = table__add_col(t, "ns", "NS", TABLE_U64);
	c[1] = table__add_col(t, "rank", "Rank", TABLE_S64);
	c[2] = table__add_col(t, "nranks", "NRanks", TABLE_S64);
	c[3] = table__add_col(t, "pid", "PID", TABLE_U64);
	c[4] = table__add_col(t, "host", "Host", TABLE_STR);
	c[5] = table__add_col(t, "aligned_by", "Aligned By", TABLE_STR);
	c[6] = table__add_col(t, "offset_ns", "Clock Offset (ns)", TABLE_S64);
	c[7] = table__add_col(t, "offset_err_ns", "+- (ns)", TABLE_U64);
	c[8] = table__add_col(t, "drift_ppb", "Drift (ppb)", TABLE_S64);
	c[9] = table__add_col(t, "points", "Collectives Used", TABLE_U64);
	c[10] = table__add_col(t, "residual_rms_ns", "Residual RMS (ns)", TABLE_U64);
	c[11] = table__add_col(t, "residual_max_ns", "Residual Max (ns)", TABLE_U64);
	c[12] = table__add_col(t, "file", "File", TABLE_STR);
	while ((r = trace_ranks__next(ranks, &i))) {
		table__row(t);
		table__set_u64(t, c[0], r->r.ns);
		if (r->r.rank >= 0)
			table__set_s64(t, c[1], r->r.rank);
		if (r->r.nranks >= 0)
			table__set_s64(t, c[2], r->r.nranks);
		table__set_u64(t, c[3], r->r.h.pid);
		table__set_str(t, c[4], r->host);
		table__set_str(t, c[5], trace_ranks__aligned_by(r->r.flags));
		table__set_s64(t, c[6], r->r.offset_ns);
		table__set_u64(t, c[7], r->r.offset_err_ns);
		table__set_s64(t, c[8], r->r.drift_ppb);
		table__set_u64(t, c[9], r->r.points);
		table__set_u64(t, c[10], r->r.residual_rms_ns);
		table__set_u64(t, c[11], r->r.residual_max_ns);
		table__set_str(t, c[12], r->path);
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
