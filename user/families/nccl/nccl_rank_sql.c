// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl_rank_sum as SQL (nccl_rank_report.c with nccl_straggle.c and nccl_coll.c; nccl_sql.c's
 * list): each rank process's time in collectives and the waits it made, in what ClickHouse
 * 18.16 runs as current releases do; docs/CLICKHOUSE.md says where it cannot equal stats.
 *
 * The SQL is laid out a clause a line, by hand: clang-format would cut its strings anywhere.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "nccl.h"

/* clang-format off */

/*
 * nccl_coll.h's collectives: each collective call that ended (not in flight), its entry and
 * its end; a call inside ncclGroupStart/End ends when its thread's outermost ncclGroupEnd
 * returns (the first one after its entry: `group_depth` says it was inside, an
 * ncclGroupEnd without it is the outermost), and one whose group never ended is none. gloo's
 * (no `ret`: seen at their entry only) are async. O(grouped calls x group ends) a thread.
 */
#define CH_COLL_COLS \
	"file_id, file, pid, tid, seq AS rseq, name, ts AS enter, " \
	"visitParamExtractString(args, 'unique_id_hash') AS comm, " \
	CH_ARG_U("seq") " AS cseq, " \
	"if(position(args, '\"rank\":') > 0, " CH_ARG_S("rank") ", -1) AS crank, " \
	"if(position(args, '\"nranks\":') > 0, " CH_ARG_S("nranks") ", -1) AS cnranks, " \
	"position(args, '\"ret\":') = 0 AS gloo"
#define CH_COLL_WHERE(grouped) \
	"{W} AND kind = 'nccl_api' AND position(args, '\"seq\":') > 0 AND " \
	"position(args, '\"in_flight\":') = 0 AND position(args, '\"group_depth\":') " grouped
#define CH_COLLS \
	"SELECT " CH_COLL_COLS ", ts + toInt64(dur) AS cend " \
	"FROM " CH_DB ".events WHERE " CH_COLL_WHERE("= 0") " " \
	"UNION ALL " \
	"SELECT file_id, file, pid, tid, rseq, name, enter, comm, cseq, crank, cnranks, gloo, " \
	       "ends[arrayFirstIndex(x -> x > enter, starts)] AS cend " \
	"FROM (SELECT " CH_COLL_COLS " FROM " CH_DB ".events WHERE " CH_COLL_WHERE("> 0") ") AS lhs " \
	"ANY LEFT JOIN (" \
		"SELECT file_id, pid, tid, arraySort(groupArray(ts)) AS starts, " \
		       "arraySort((e, s) -> s, groupArray(ts + toInt64(dur)), groupArray(ts)) " \
		       "AS ends " \
		"FROM " CH_DB ".events " \
		"WHERE {W} AND kind = 'nccl_api' AND name = 'ncclGroupEnd' " \
		      "AND position(args, '\"group_depth\":') = 0 " \
		      "AND position(args, '\"in_flight\":') = 0 " \
		"GROUP BY file_id, pid, tid) AS jk1 USING file_id, pid, tid " \
	"WHERE arrayFirstIndex(x -> x > enter, starts) > 0"
/* A rank process of the collectives: its file and pid. */
#define CH_WHO "concat(file_id, '\\t', file, '\\t', toString(pid))"
/*
 * nccl_straggle.h's summaries: a collective (communicator, seq) of 2 ranks or more, the
 * process that entered last and the others' waits for it (taken from the job's first entry,
 * as nccl_stragglers' SQL), then per process that entered last: how often, the waits, the
 * function most of them were in, the longest. As nccl_straggle.c decides them: a collective's
 * function is its first record's (calls of two functions can share a seq), the last entry
 * at the same nanosecond the later record's (argMin and argMax on the row's seq, never
 * whichever row a server thread met first).
 */
#define CH_LATE \
	"SELECT who, sum(n) AS late, sum(fw) AS made, argMax(cname, fw) AS top, " \
	       "max(fw) AS topw, argMax(wseq, wwait) AS worst_seq, max(wwait) AS worst " \
	"FROM (" \
		"SELECT who, cname, count() AS n, sum(wait) AS fw, argMax(cseq, wait) AS wseq, " \
		       "max(wait) AS wwait " \
		"FROM (" \
			"SELECT comm, cseq, argMin(name, (rseq, file_id)) AS cname, " \
			       "argMax(" CH_WHO ", (at, rseq, file_id)) AS who, " \
			       "toUInt64(count() * max(at) - sum(at)) AS wait " \
			"FROM (SELECT *, enter - " CH_SCALAR("SELECT min(ts) FROM " CH_DB ".events " \
						"WHERE " CH_COLL_WHERE(">= 0")) " AS at " \
			      "FROM (" CH_COLLS ")) " \
			"GROUP BY comm, cseq HAVING count() > 1) " \
		"GROUP BY who, cname) " \
	"GROUP BY who"
/*
 * Per rank process: its calls, its first entry and last end, its time inside them (the union
 * of its calls' intervals, each counted once: a sweep over their starts and ends), its rank
 * in its largest communicator (the first call's of the largest).
 */
#define CH_RANK_PROCS \
	"SELECT " CH_WHO " AS who, file_id, file, pid, count() AS calls, " \
	       "countIf(gloo) AS async_calls, min(enter) AS first_enter, max(cend) AS last_end, " \
	       "max(cnranks) AS mx, " \
	       "argMin(crank, bitOr(bitShiftLeft(toUInt64(16777216 - cnranks), 39), rseq)) " \
	       "AS rk, " \
	       "groupArrayIf(enter, NOT gloo AND cend > enter) AS s0, " \
	       "groupArrayIf(cend, NOT gloo AND cend > enter) AS e0, " \
	       "arraySort(arrayConcat(s0, e0)) AS pts, " \
	       "arrayCumSum(arraySort((d, p) -> p, " \
			"arrayConcat(arrayMap(x -> toInt64(1), s0), " \
				    "arrayMap(x -> toInt64(-1), e0)), " \
			"arrayConcat(s0, e0))) AS cum, " \
	       "arraySum(arrayMap((c, a, b) -> if(c > 0, b - a, 0), " \
			"arrayPopBack(cum), arrayPopBack(pts), arrayPopFront(pts))) AS busy " \
	"FROM (" CH_COLLS ") GROUP BY file_id, file, pid"
/* Each rank process's label where its RANK record names it ("rank 3 @ node7"). */
#define CH_RANK_LABELS \
	"SELECT file_id, file, pid, any(name) AS label " \
	"FROM " CH_DB ".events WHERE {J} AND kind = 'rank' GROUP BY file_id, file, pid"

static const struct ch_col ch_nccl_rank_sum_cols[] = {
	{ "rank", "Rank", 's' },
	{ "nranks", "NRanks", 's' },
	{ "pid", "PID", 'u' },
	{ "collectives", "Collectives", 'u' },
	{ "span_ns", "Span (ns)", 'u' },
	{ "coll_ns", "In Collectives (ns)", 'u' },
	{ "outside_ns", "Outside (ns)", 'u' },
	{ "coll_pct", "In Coll (%)", 'd' },
	{ "late", "Entered Last", 'u' },
	{ "made_wait_ns", "Made Others Wait (ns)", 'u' },
	{ "top_op", "Mostly In", 't' },
	{ "top_op_pct", "Share (%)", 'd' },
	{ "worst_seq", "Worst Seq", 'u' },
	{ "worst_wait_ns", "Worst Wait (ns)", 'u' },
	{ "name", "Process", 't' },
	{},
};

const struct ch_report ch_nccl_rank_sum = {
	.name = "nccl_rank_sum",
	.cols = ch_nccl_rank_sum_cols,
	.sql = "SELECT if(rank_v >= 0, rank_v, NULL), if(mx >= 0, mx, NULL), hpid, calls, span, "
	       "if(timed, inside, NULL), if(timed, span - inside, NULL), "
	       "if(timed, if(span > 0, inside * 100 / span, 0), NULL), late, made, "
	       "if(made > 0, top, NULL), if(made > 0, topw * 100 / made, NULL), "
	       "if(made > 0, worst_seq, NULL), if(made > 0, worst, NULL), "
	       "if(label != '', label, if(rank_v >= 0, concat('rank ', toString(rank_v), ' (pid ', "
	       "toString(hpid), ')'), concat('pid ', toString(hpid)))) "
	       "FROM (SELECT *, if(mx >= 0, rk, -1) AS rank_v, " CH_RANK_NS_ID("pid") " AS fpid, " CH_HOST_ID("pid") " AS hpid, "
		     "toUInt64(if(last_end > first_enter, last_end - first_enter, 0)) AS span, "
		     "least(toUInt64(busy), span) AS inside, async_calls < calls AS timed "
	       "FROM (SELECT * FROM (SELECT * FROM (" CH_RANK_PROCS ") AS lhs "
				    "ANY LEFT JOIN (" CH_LATE ") AS jk2 USING who) AS lhs "
		     "ANY LEFT JOIN (" CH_RANK_NS ") AS jk3 USING file_id, file) AS lhs "
	       "ANY LEFT JOIN (" CH_RANK_LABELS ") AS jk4 USING file_id, file, pid) "
	       "ORDER BY rank_v, fpid FORMAT TabSeparated",
	.needs = "nccl_api", /* the collectives' processes: none without a call */
};

/* clang-format on */
