// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports as SQL (ch_reports.h), in what ClickHouse 18.16 runs as current releases do:
 * no window functions (a share of the total is a scalar subquery), no JSONExtract (arguments
 * by visitParamExtract*, which reads dump's flat keys), no quantileExactInclusive (a median
 * as stats takes it, between the two middle values, from the sorted array).
 */
#include <stdlib.h>
#include <string.h>
#include "ch_reports.h"
#include "ch_schema.h"

/* nsys's timing columns (time_sum.h), then the name. */
static const struct ch_col ch_time_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "name", "Name", 't' },	 {},
};

/* api_sum.h's rows of a uprobe family's KIND: the calls no traced call made, returned. */
#define CH_API_ROWS(kind)                                                                          \
	"kind = '" kind "' AND position(args, '\"depth\":') = 0 AND "                              \
	"position(args, '\"in_flight\":') = 0"

/* The timing columns of ROWS by name, EXTRA's columns (of aggregates X) before the name. */
#define CH_TIME_SUM_X(rows, extra, x)                                                              \
	"SELECT total_ns * 100 / (SELECT sum(dur) FROM " CH_DB ".events WHERE {W} AND " rows       \
	"), total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, " extra "name FROM ("      \
	"SELECT sum(dur) AS total_ns, count() AS count, avg(dur) AS avg_ns, " x                    \
	"arraySort(groupArray(dur)) AS s, "                                                        \
	"if(count % 2 = 1, toFloat64(s[intDiv(count, 2) + 1]), "                                   \
	"(s[intDiv(count, 2)] + s[intDiv(count, 2) + 1]) / 2) AS med_ns, "                         \
	"min(dur) AS min_ns, max(dur) AS max_ns, stddevPop(dur) AS stddev_ns, name "               \
	"FROM " CH_DB ".events WHERE {W} AND " rows " GROUP BY name) "                             \
	"ORDER BY total_ns DESC, name FORMAT TabSeparated"
#define CH_TIME_SUM(rows) CH_TIME_SUM_X(rows, "", "")

static const struct ch_report ch_cuda_api_sum = {
	.name = "cuda_api_sum",
	.cols = ch_time_cols,
	.sql = CH_TIME_SUM(CH_API_ROWS("cuda_api")),
};

/* nccl_report.c's: the bytes the collectives moved (NULL: none known), the failed calls. */
static const struct ch_col ch_nccl_sum_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "bytes", "Bytes", 'u' },	 { "errors", "Errors", 'u' },
	{ "name", "Name", 't' },	 {},
};

static const struct ch_report ch_nccl_sum = {
	.name = "nccl_sum",
	.cols = ch_nccl_sum_cols,
	.sql = CH_TIME_SUM_X(CH_API_ROWS("nccl_api"), "if(with_bytes > 0, bytes, NULL), errors, ",
			     "sumIf(visitParamExtractUInt(args, 'bytes'), "
			     "position(args, '\"bytes\":') > 0) AS bytes, "
			     "countIf(position(args, '\"bytes\":') > 0) AS with_bytes, "
			     "countIf(visitParamExtractInt(args, 'ret') != 0) AS errors, "),
};

/*
 * nccl_straggle.h's collectives: the calls of one communicator with one seq, of 2 ranks or
 * more; the waits from each entry to the last one's, their sum taken from the job's first
 * entry so that a thousand ranks' wall-clock ns do not pass 2^63.
 */
static const struct ch_col ch_straggler_cols[] = {
	{ "comm", "Comm", 't' },
	{ "seq", "Seq", 'u' },
	{ "name", "Collective", 't' },
	{ "ranks", "Ranks", 'u' },
	{ "nranks", "Of", 's' },
	{ "last_rank", "Last Rank", 's' },
	{ "last", "Last", 't' },
	{ "skew_ns", "Skew (ns)", 'u' },
	{ "wait_ns", "Wait (ns)", 'u' },
	{ "end_spread_ns", "End Spread (ns)", 'u' },
	{ "start_wall_ns", "Start (wall ns)", 's' },
	{},
};

#define CH_COLL_ROWS "kind = 'nccl_api' AND position(args, '\"seq\":') > 0"

static const struct ch_report ch_nccl_stragglers = {
	.name = "nccl_stragglers",
	.cols = ch_straggler_cols,
	.sql = "SELECT comm, seq, any(name), count() AS ranks, any(nranks), argMax(rank, at), "
	       "concat('rank ', toString(argMax(rank, at)), ' @ ', argMax(host, at)), "
	       "max(at) - min(at), toUInt64(count() * max(at) - sum(at)) AS wait_ns, "
	       "max(at + dur) - min(at + dur), min(ts) FROM ("
	       "SELECT visitParamExtractString(args, 'unique_id_hash') AS comm, "
	       "visitParamExtractUInt(args, 'seq') AS seq, name, rank, host, dur, ts, "
	       "visitParamExtractInt(args, 'nranks') AS nranks, ts - (SELECT min(ts) FROM " CH_DB
	       ".events WHERE {W} AND " CH_COLL_ROWS ") AS at "
	       "FROM " CH_DB ".events WHERE {W} AND " CH_COLL_ROWS ") "
	       "GROUP BY comm, seq HAVING ranks > 1 ORDER BY wait_ns DESC, comm, seq "
	       "FORMAT TabSeparated",
};

const struct ch_report *const ch_reports[] = {
	&ch_cuda_api_sum,
	&ch_nccl_sum,
	&ch_nccl_stragglers,
	NULL,
};

const struct ch_report *ch_report__find(const char *name)
{
	for (const struct ch_report *const *r = ch_reports; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	return NULL;
}

char *ch_report__sql(const struct ch_report *r, const char *where)
{
	size_t wl = strlen(where), n = 0;
	const char *p;
	char *out, *o;

	for (p = r->sql; (p = strstr(p, "{W}")); p += 3)
		n++;
	out = malloc(strlen(r->sql) + n * wl + 1);
	if (!out)
		return NULL;
	for (o = out, p = r->sql; *p;) {
		if (!strncmp(p, "{W}", 3)) {
			memcpy(o, where, wl);
			o += wl;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}
