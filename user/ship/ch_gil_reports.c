// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil's reports past gil_sum as SQL (ch_reports.h), in what ClickHouse 18.16 runs:
 * gil_blocked_by, which threads made which ones wait for the GIL and how long.
 */
#include "ch_reports.h"
#include "ch_sql.h"

/*
 * gil_blocked_by (gil_report.c), per process, waiter and holder: a file's in-kernel totals
 * (`gil_blame` rows, cumulative: the last per key counts) when it has them, else its waits'
 * (`gil_wait` rows by their holder_tid). The ids with their rank namespace (a merged file's
 * holder_tid has it already); the names the file's (`thread_names`), "(unknown)" for no holder.
 */
static const struct ch_col ch_gil_blocked_by_cols[] = {
	{ "pid", "PID", 'u' },
	{ "waiter_tid", "Waiter TID", 'u' },
	{ "waiter_name", "Waiter", 't' },
	{ "holder_tid", "Holder TID", 'u' },
	{ "holder_name", "Holder", 't' },
	{ "wait_count", "Waits", 'u' },
	{ "total_ns", "Total (ns)", 'u' },
	{},
};

/* A row's holder_tid with its rank namespace: a merged file's has it, else its file's. */
#define CH_HOLDER                                                                                            \
	"if(visitParamExtractUInt(args, 'holder_tid') = 0 OR visitParamExtractUInt(args, "                   \
	"'holder_tid') > 4194303, visitParamExtractUInt(args, 'holder_tid'), bitOr(bitShiftLeft(" CH_FILE_NS \
	", 22), visitParamExtractUInt(args, 'holder_tid')))"

/* Per file, waiter and holder: the last snapshot's totals, else the waits'. */
#define CH_BLAME_ROWS                                                                              \
	"SELECT file_id, file, pid, tid, " CH_HOLDER " AS holder, "                                \
	"argMax(visitParamExtractUInt(args, 'count'), seq) AS cnt, "                               \
	"argMax(visitParamExtractUInt(args, 'total_ns'), seq) AS total FROM " CH_DB ".events "     \
	"WHERE {W} AND kind = 'gil_blame' GROUP BY file_id, file, pid, tid, holder "               \
	"UNION ALL SELECT file_id, file, pid, tid, " CH_HOLDER " AS "                              \
	"holder, count() AS cnt, sum(dur) AS total FROM " CH_DB ".events WHERE {W} AND "           \
	"kind = 'gil_wait' AND file_id NOT IN (SELECT file_id FROM " CH_DB ".events WHERE {J} "    \
	"AND kind = 'gil_blame') GROUP BY file_id, file, pid, tid, holder"

/* Each thread's name in a file, by its id with its rank namespace. */
#define CH_HOLDER_NAMES                                                                            \
	"SELECT file_id, bitOr(bitShiftLeft(" CH_NAMES_NS ", 22), tid) AS "                        \
	"holder, any(name) AS hname FROM " CH_DB ".events WHERE {J} AND kind = 'thread_names' "    \
	"GROUP BY file_id, holder"

const struct ch_report ch_gil_blocked_by = {
	.name = "gil_blocked_by",
	.cols = ch_gil_blocked_by_cols,
	.sql = "SELECT fpid, fwaiter, wname, holder, if(holder = 0, '(unknown)', hname), cnt, "
	       "total FROM (SELECT file_id, holder, cnt, total, wname, " CH_NS_ID("pid") " AS fpid, " CH_NS_ID(
		       "tid") " AS fwaiter FROM ("
			      "SELECT * FROM (" CH_BLAME_ROWS
			      ") WHERE cnt > 0) AS lhs ANY LEFT JOIN (SELECT file_id, "
			      "file, pid, tid, name AS wname, " CH_NAMES_NS " AS ns FROM " CH_DB
			      ".events WHERE {J} AND kind = 'thread_names') AS jg1 "
			      "USING file_id, file, pid, tid) AS lhs ANY LEFT JOIN "
			      "(" CH_HOLDER_NAMES ") AS jg2 USING file_id, holder "
			      "ORDER BY total DESC, fwaiter, holder FORMAT TabSeparated",
	.needs = "gil_blame,gil_wait", /* the snapshots or the waits by holder */
};
