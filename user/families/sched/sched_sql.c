// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched's reports as SQL in the server (stats --from, docs/CLICKHOUSE.md): sched_sum
 * (sched_report.c's), offcpu_stacks (sched_stacks_report.c's: the time off the CPU by the
 * stack's line in the job's code) and the off-CPU time's folded lines (stacks --from --offcpu:
 * export --format folded-offcpu's).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "sched.h"

/*
 * sched_sum (sched_report.c), per thread: the switch-outs (`offcpu` rows, and a thread's last
 * as it exits, `offcpu_exit`), each adding the run slice it ended, clipped to the recording's
 * start (the file's `trace_window` row): a slice that began before it counts from it, a
 * switch-out clipped there (it began before the start) none. The names are the file's own
 * (its `thread_names` rows), NULL where the file has none, as stats leaves them out.
 */
#define CH_ONCPU "toInt64(visitParamExtractUInt(args, 'oncpu_ns'))"

static const struct ch_col ch_sched_sum_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "oncpu_ns", "On-CPU (ns)", 'u' },
	{ "offcpu_ns", "Off-CPU (ns)", 'u' },
	{ "blocked_ns", "Blocked (ns)", 'u' },
	{ "runnable_ns", "Runnable (ns)", 'u' },
	{ "switches", "Switches", 'u' },
	{ "preemptions", "Preemptions", 'u' },
	{ "process", "Process", 't' },
	{ "thread_name", "Thread", 't' },
	{},
};

static const struct ch_report ch_sched_sum = {
	.name = "sched_sum",
	.cols = ch_sched_sum_cols,
	.sql = "SELECT " CH_NS_ID("pid") " AS fpid, " CH_NS_ID(
		"tid") " AS ftid, oncpu_ns, "
		       "offcpu_ns, blocked_ns, runnable_ns, switches, "
		       "preemptions, process, thread FROM (SELECT file_id, file, pid, tid, "
		       "sum(oncpu_in) AS oncpu_ns, sum(dur) AS offcpu_ns, "
		       "sum(visitParamExtractUInt(args, 'blocked_ns')) AS blocked_ns, "
		       "sum(least(visitParamExtractUInt(args, 'runnable_ns'), dur)) AS runnable_ns, "
		       "count() AS switches, countIf(visitParamExtractUInt(args, 'state') = 0) AS "
		       "preemptions FROM (SELECT file_id, file, pid, tid, dur, args, "
		       "if(position(args, '\"began_before_start\":') > 0, toInt64(0), "
		       "if(ts - " CH_ONCPU " >= ws, " CH_ONCPU
		       ", greatest(ts - ws, toInt64(0)))) AS oncpu_in "
		       "FROM " CH_DB ".events ANY LEFT JOIN (SELECT file_id, ts AS ws FROM " CH_DB
		       ".events WHERE {J} AND kind = 'trace_window') AS jr1 USING file_id "
		       "WHERE {W} AND kind IN ('offcpu', 'offcpu_exit')) GROUP BY file_id, file, pid, tid) AS lhs "
		       "ANY LEFT JOIN (SELECT file_id, file, pid, tid, "
		       "if(position(args, '\"process\":') > 0, visitParamExtractString(args, 'process'), "
		       "NULL) AS process, if(position(args, '\"thread\":') > 0, "
		       "visitParamExtractString(args, 'thread'), NULL) AS thread, " CH_NAMES_NS
		       " AS ns FROM " CH_DB ".events "
		       "WHERE {J} AND kind = 'thread_names') AS jr2 USING file_id, file, pid, tid "
		       "ORDER BY offcpu_ns DESC, fpid, ftid FORMAT TabSeparated",
	.needs = "offcpu,offcpu_exit", /* the switch-outs by thread */
};

static const struct ch_col ch_offcpu_stacks_cols[] = {
	{ "process", "Process", 't' },
	CH_FRAME_SUM_COLS,
};

/*
 * A process's names as a pass meets them (trace_model.c): its snapshot's, a fork's child's,
 * an exec's, its main thread's renames; per file and process, sorted by the row's place.
 */
#define CH_PROC_NAMES                                                                              \
	"SELECT file_id, file, pid, arraySort(e -> tupleElement(e, 1), groupArray((seq, nm))) AS " \
	"evs FROM (SELECT file_id, file, pid, seq, name AS nm FROM " CH_DB ".events WHERE {J} "    \
	"AND (kind IN ('process', 'exec') OR (kind = 'comm' AND tid = pid)) UNION ALL SELECT "     \
	"file_id, file, toUInt32(bitAnd(visitParamExtractUInt(args, 'child_pid'), 4194303)) AS "   \
	"pid, seq, visitParamExtractString(args, 'comm') AS nm FROM " CH_DB ".events WHERE {J} "   \
	"AND kind = 'fork' AND visitParamExtractUInt(args, 'child_pid') = "                        \
	"visitParamExtractUInt(args, 'child_tid')) GROUP BY file_id, file, pid"

/*
 * offcpu_stacks (sched_stacks_report.c): the off-CPU intervals by their process's name when
 * the pass met them (a pyenv shim's python3 is bash before its exec; "?" before any name),
 * or its part in the job or its rank's label where the file's reports give it one (its
 * `thread_names` process, when none of its names).
 */
static const struct ch_report ch_offcpu_stacks = {
	.name = "offcpu_stacks",
	.cols = ch_offcpu_stacks_cols,
	.sql = CH_FRAME_SUM(
		"SELECT file_id, seq, if(notEmpty(evs) AND (NOT has_final OR "
		"has(arrayMap(e -> tupleElement(e, 2), evs), final)), if(notEmpty(bef), "
		"bef[length(bef)], '?'), if(has_final, final, '?')) AS label, ns, sid FROM ("
		"SELECT file_id, seq, ns, sid, evs, has_final, final, arrayMap(e -> tupleElement(e, "
		"2), arrayFilter(e -> tupleElement(e, 1) < seq, evs)) AS bef FROM (SELECT * FROM ("
		"SELECT file_id, file, pid, tid, seq, dur AS ns, " CH_SID "kind = 'offcpu') AS lhs "
		"ANY LEFT JOIN (" CH_PROC_NAMES
		") AS jc7 USING file_id, file, pid) AS lhs ANY LEFT JOIN ("
		"SELECT file_id, file, pid, tid, position(args, '\"process\":') > 0 AS has_final, "
		"visitParamExtractString(args, 'process') AS final FROM " CH_DB ".events WHERE {J} "
		"AND kind = 'thread_names') AS jc8 USING file_id, file, pid, tid)"),
	.needs = "offcpu", /* the intervals by stack */
};

/*
 * export --format folded-offcpu's lines (`stacks --from --offcpu`): the off-CPU intervals with
 * a stack (`offcpu` rows with a `stack_id`), their time summed by the stack's folded text, in
 * microseconds (a text under 1 us left out).
 */
static const struct ch_report ch_folded_offcpu = {
	.name = "folded-offcpu",
	.cols = ch_folded_cols,
	.sql = "SELECT text, intDiv(sum(dur), 1000) AS us FROM (SELECT file_id, dur, "
	       "visitParamExtractUInt(args, 'stack_id') AS sid, toUInt8(0) AS kernel FROM " CH_DB
	       ".events WHERE {W} AND kind = 'offcpu' AND position(args, '\"stack_id\":') > 0) AS lhs "
	       "ANY LEFT JOIN (SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS sid, "
	       "toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, name AS text FROM " CH_DB
	       ".events WHERE {J} AND kind = 'stack') AS jr9 USING file_id, sid, kernel GROUP BY text "
	       "HAVING us > 0 ORDER BY text FORMAT TabSeparated",
};

static const struct ch_report *const sched_sql_reports[] = {
	&ch_sched_sum,
	&ch_offcpu_stacks,
	NULL,
};

static const struct ch_report *const sched_sql_inputs[] = {
	&ch_folded_offcpu,
	NULL,
};

/* sched's SQL (struct family.sql). */
const struct family_sql sched_sql = {
	.reports = sched_sql_reports,
	.inputs = sched_sql_inputs,
};
