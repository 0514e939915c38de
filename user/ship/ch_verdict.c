// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's inputs every file's rows answer as SQL (ch_verdict.h): the rows export
 * --format clickhouse writes of each file, whatever it recorded. A whole file's rows (its
 * window, its names) are taken for every file the filtered rows come from.
 */
#include <string.h>
#include "ch_verdict.h"
#include "ch_sql.h"

/* The files the filtered rows come from. */
#define CH_FILES_OF_ROWS "file_id IN (SELECT file_id FROM " CH_DB ".events WHERE {W})"

static const struct ch_col ch_span_cols[] = {
	{ "start", "Start", 's' },
	{ "end", "End", 's' },
	{ "first", "First", 's' },
	{ "last", "Last", 's' },
	{ "files", "Files", 'u' },
	{ "families", "Families", 't' },
	{},
};

const struct ch_report ch_verdict_span = {
	.name = "verdict_span",
	.cols = ch_span_cols,
	.sql = "SELECT min(ts), max(visitParamExtractInt(args, 'end_ts')), "
	       "min(visitParamExtractInt(args, 'first_ts')), "
	       "max(visitParamExtractInt(args, 'last_ts')), count(), "
	       "arrayStringConcat(groupUniqArray(visitParamExtractString(args, 'families')), ',') FROM " CH_DB
	       ".events "
	       "WHERE {J} AND kind = 'trace_window' AND " CH_FILES_OF_ROWS " FORMAT TabSeparated",
};

static const struct ch_col ch_names_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "process", "Process", 't' },
	{ "thread", "Thread", 't' },
	{ "pool", "Pool", 't' },
	{ "owner", "Owner", 'u' },
	{ "owner_what", "Owner's Part", 't' },
	{},
};

const struct ch_report ch_verdict_names = {
	.name = "verdict_names",
	.cols = ch_names_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", if(position(args, '\"process\":') > 0, "
		       "visitParamExtractString(args, 'process'), NULL), "
		       "if(position(args, '\"thread\":') > 0, visitParamExtractString(args, 'thread'), "
		       "NULL), " CH_STR_OR_NULL(
			       "args",
			       "pool") ", if(position(args, '\"owner\":') > 0, "
				       "visitParamExtractUInt(args, 'owner'), NULL), " CH_STR_OR_NULL(
					       "args",
					       "owner_what") " FROM (SELECT pid, tid, args, " CH_NAMES_NS
							     " AS ns "
							     "FROM " CH_DB
							     ".events WHERE {J} AND kind = 'thread_names' AND " CH_FILES_OF_ROWS
							     ") FORMAT TabSeparated",
};

static const struct ch_col ch_lives_cols[] = {
	{ "pid", "PID", 'u' },
	{ "tid", "TID", 'u' },
	{ "born", "Born", 's' },
	{ "died", "Died", 's' },
	{},
};

/* verdict__observe's: a fork's child born at the last fork of it, a thread dead at its last exit. */
const struct ch_report ch_verdict_lives = {
	.name = "verdict_lives",
	.cols = ch_lives_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", born, died FROM (SELECT file_id, "
		       "file, xpid AS pid, xtid AS tid, born, died FROM (SELECT file_id, file, " CH_GIL_TASK("pid") " AS xpid, " CH_GIL_TASK(
			       "tid") " AS xtid, "
				      "if(countIf(kind = 'fork') > 0, argMaxIf(ts, seq, kind = 'fork'), 0) AS born, "
				      "if(countIf(kind = 'exit') > 0, argMaxIf(ts, seq, kind = 'exit'), 0) AS died "
				      "FROM " CH_DB
				      ".events WHERE {W} AND kind IN ('fork', 'exit') "
				      "GROUP BY file_id, file, xpid, xtid)) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
				      ") AS jv1 USING file_id, file, pid, tid FORMAT TabSeparated",
};

static const struct ch_col ch_kinds_cols[] = {
	{ "kind", "Kind", 't' },
	{ "count", "Rows", 'u' },
	{},
};

const struct ch_report ch_verdict_kinds = {
	.name = "verdict_kinds",
	.cols = ch_kinds_cols,
	.sql = "SELECT kind, count() FROM " CH_DB ".events WHERE {W} GROUP BY kind ORDER BY kind "
	       "FORMAT TabSeparated",
};

static const struct ch_col ch_losses_cols[] = {
	{ "family", "Family", 't' },
	{ "cause", "Cause", 't' },
	{ "count", "Lost", 'u' },
	{},
};

/*
 * The events lost while recording (the `loss` rows: trace_walk.c's counts by family and
 * cause, a cause this bpfsight does not know "unknown"), in the order first recorded.
 */
const struct ch_report ch_verdict_losses = {
	.name = "verdict_losses",
	.cols = ch_losses_cols,
	.sql = "SELECT fam, cause, sum(visitParamExtractUInt(args, 'count')) FROM (SELECT file, seq, "
	       "args, visitParamExtractString(args, 'family') AS fam, if(startsWith(name, "
	       "'cause_'), 'unknown', name) AS cause FROM " CH_DB ".events WHERE {W} AND kind = "
	       "'loss') GROUP BY fam, cause ORDER BY min(file), min(seq) FORMAT TabSeparated",
};

static const struct ch_report *const ch_verdict_own[] = {
	&ch_verdict_span,
	&ch_verdict_names,
	&ch_verdict_lives,
	&ch_verdict_kinds,
	&ch_verdict_losses,
	&ch_file_order,
	NULL,
};

const struct ch_report *ch_verdict__own_at(size_t i)
{
	return i < sizeof(ch_verdict_own) / sizeof(ch_verdict_own[0]) ? ch_verdict_own[i] : NULL;
}

const struct ch_report *ch_verdict__own(const char *name)
{
	for (const struct ch_report *const *r = ch_verdict_own; *r; r++)
		if (!strcmp((*r)->name, name))
			return *r;
	return NULL;
}
