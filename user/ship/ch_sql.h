/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the families' SQL (their NAME_sql.c: reports and rules' inputs computed in the server,
 * ch_reports.h) and the files' own reads (ch_verdict.c) share: the same rows, the same ids,
 * written once. A plug-in header of ship's: a family includes it.
 */
#ifndef BPFSIGHT_CH_SQL_H
#define BPFSIGHT_CH_SQL_H

#include "ch_schema.h"

/*
 * A scalar subquery Q's answer, a number: current releases type it Nullable (NULL when Q has no
 * row), 18.16 as its column; a Nullable column's NULL then spreads (a LEFT JOIN's row without
 * a match has NULL there, not 0). ifNull makes it the column's type on both.
 */
#define CH_SCALAR(q) "ifNull((" q "), 0)"

/* api_sum.h's rows of a uprobe family's KIND: the calls no traced call made, returned. */
#define CH_API_ROWS(kind)                                                                          \
	"kind = '" kind "' AND position(args, '\"depth\":') = 0 AND "                              \
	"position(args, '\"in_flight\":') = 0"

/* An id as a merged file's reports show it: with its rank namespace (ns, of thread_names). */
#define CH_NS_ID(id) "bitOr(bitShiftLeft(ns, 22), " id ")"

/* A fork's row is its child's (a merged file's pids and tids less their rank namespace). */
#define CH_GIL_TASK(id)                                                                            \
	"toUInt32(if(kind = 'fork', bitAnd(visitParamExtractUInt(args, 'child_" id                 \
	"'), 4194303), " id "))"

/*
 * The files the rows ({W}) come from (their window rows: one a file, a narrow read of the
 * table's order) in merge's order (merge.c, section_order): by the rank
 * their NCCL calls say the file is (its rank in its largest communicator; none last), the
 * largest communicator first, then by path (merge: as given).
 */
#define CH_FILE_ORDER                                                                                        \
	"SELECT groupArray(file_id) FROM (SELECT file_id FROM (SELECT file_id, file "                        \
	"FROM " CH_DB                                                                                        \
	".events WHERE {W} AND kind = 'trace_window') AS lhs ANY LEFT JOIN (SELECT file_id, argMax(r, nr * " \
	"4294967296 - r) AS mrank, max(nr) AS mnr FROM (SELECT file_id, visitParamExtractInt("               \
	"args, 'rank') AS r, visitParamExtractInt(args, 'nranks') AS nr FROM " CH_DB ".events "              \
	"WHERE {J} AND kind = 'nccl_api' AND position(args, '\"nranks\":') > 0 AND "                         \
	"position(args, '\"rank\":') > 0) GROUP BY file_id) AS jq1 USING file_id ORDER BY if(mnr > 0, "      \
	"toUInt32(mrank), 4294967295), mnr DESC, file)"
/*
 * A row's file's rank namespace when the rows come from several files not merged: its place in
 * CH_FILE_ORDER (the first 0), so that two files' threads of the same ids stay apart, as merge
 * keeps them; 0 for the rows of one file. {F}: that order, asked once (ch_file_order's answer,
 * an array literal) or the subquery itself (ch_report__sql).
 */
#define CH_FILE_NS "toUInt64(greatest(toInt64(indexOf({F}, file_id)) - 1, 0))"
/* A thread_names row's rank namespace: its merged file's, else its file's (CH_FILE_NS). */
#define CH_NAMES_NS                                                                                \
	"if(visitParamExtractUInt(args, 'ns') > 0, visitParamExtractUInt(args, 'ns'), " CH_FILE_NS \
	")"

/* Each thread's rank namespace (CH_NAMES_NS), as `ns`, by file, pid and tid. */
#define CH_THREAD_NS                                                                               \
	"SELECT file_id, file, pid, tid, " CH_NAMES_NS " AS ns FROM " CH_DB                        \
	".events WHERE {J} AND kind = 'thread_names'"

/* Each process's rank namespace (CH_NAMES_NS), as `ns`, by file and pid. */
#define CH_PROC_NS                                                                                 \
	"SELECT file_id, pid, any(" CH_NAMES_NS ") AS ns FROM " CH_DB ".events WHERE {J} AND "     \
	"kind = 'thread_names' GROUP BY file_id, pid"

/* String KEY of a row's ARGS (a column of dump's JSON), NULL when it has none. */
#define CH_STR_OR_NULL(args, key)                                                                  \
	"if(position(" args ", '\"" key "\":') > 0, visitParamExtractString(" args ", '" key       \
	"'), NULL)"

/*
 * Each file's stacks: their id, whether a CPU sample's in kernel code, their frames' ids. A
 * stack not read has no frames: 18.16 evaluates both sides of an `if`, so the ids are parsed
 * from '0' there (and thrown away), never from an empty string, which fails the query.
 */
#define CH_STACK_ROWS                                                                              \
	"SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS sid, "                         \
	"toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, "                               \
	"visitParamExtractString(args, 'frames') AS fr, if(fr = '', emptyArrayUInt64(), "          \
	"arrayMap(x -> toUInt64(x), splitByChar(',', if(fr = '', '0', fr)))) AS ids, "             \
	"visitParamExtractUInt(args, 'site') AS site, visitParamExtractUInt(args, 'via') AS via "  \
	"FROM " CH_DB ".events WHERE {J} AND kind = 'stack'"

/* Each file's frames, their columns prefixed P: id, kind, function, file, and their ids. */
#define CH_FRAME_ROWS(p)                                                                           \
	"SELECT file_id, visitParamExtractUInt(args, 'frame_id') AS " p "fid, "                    \
	"visitParamExtractUInt(args, 'frame_kind') AS " p "kind, name AS " p "name, "              \
	"visitParamExtractString(args, 'path') AS " p "path, "                                     \
	"visitParamExtractUInt(args, 'func_id') AS " p "func, "                                    \
	"visitParamExtractUInt(args, 'file_id') AS " p "file, "                                    \
	"visitParamExtractUInt(args, 'line') AS " p "line, "                                       \
	"visitParamExtractUInt(args, 'addr') AS " p "addr FROM " CH_DB ".events WHERE {J} AND "    \
	"kind = 'frame'"

/*
 * mem's site of each user stack (mem_site.h, as mem_sites__of names it): its `stack` row's
 * `site` and `via` (frame_sum__own_site's frames, the same C), their frames' ids (sfid, vfid:
 * 0 for none; frames equal by stack_frame__key share an id, as mem_site.c numbers them). A
 * stack without a site (none of its frames read) has no row: its records are "(no stack)", as
 * are those without a stack_id.
 */
#define CH_MEM_SITE_IDS                                                                            \
	"SELECT file_id, sid, ids[site] AS sfid, if(via > 0, ids[via], toUInt64(0)) AS vfid FROM " \
	"(" CH_STACK_ROWS ") WHERE kernel = 0 AND site > 0"

/* The same with the two frames' columns, prefixed s and v (CH_FRAME_ROWS). */
#define CH_MEM_SITES                                                                               \
	"SELECT * FROM (SELECT * FROM (" CH_MEM_SITE_IDS ") AS lhs ANY LEFT JOIN (" CH_FRAME_ROWS( \
		"s") ") AS jq2 "                                                                   \
		     "USING file_id, sfid) AS lhs ANY LEFT JOIN (" CH_FRAME_ROWS(                  \
			     "v") ") AS jq3 USING file_id, vfid"

/* The timing columns of ROWS by name, EXTRA's columns (of aggregates X) before the name. */
#define CH_TIME_SUM_X(rows, extra, x)                                                                                       \
	"SELECT total_ns * 100 / " CH_SCALAR(                                                                               \
		"SELECT sum(dur) FROM " CH_DB                                                                               \
		".events WHERE {W} AND " rows) ", total_ns, count, avg_ns, med_ns, min_ns, max_ns, stddev_ns, " extra       \
					       "name FROM ("                                                                \
					       "SELECT sum(dur) AS total_ns, count() AS count, avg(dur) AS avg_ns, " x      \
					       "arraySort(groupArray(dur)) AS s, "                                          \
					       "if(count % 2 = 1, toFloat64(s[intDiv(count, 2) + 1]), "                     \
					       "(s[intDiv(count, 2)] + s[intDiv(count, 2) + 1]) / 2) AS med_ns, "           \
					       "min(dur) AS min_ns, max(dur) AS max_ns, stddevPop(dur) AS stddev_ns, name " \
					       "FROM " CH_DB ".events WHERE {W} AND " rows                                  \
					       " GROUP BY name) "                                                           \
					       "ORDER BY total_ns DESC, name FORMAT TabSeparated"
#define CH_TIME_SUM(rows) CH_TIME_SUM_X(rows, "", "")

/*
 * same_frame's (frame_sum.c) of the frame prefixed P, in the shipped file: kind, function and
 * file ids, and a Python frame's line or another's address.
 */
#define CH_SITE_KEY(p)                                                                             \
	"concat(file_id, '\\t', toString(" p "kind), '\\t', toString(" p "func), '\\t', "          \
	"toString(" p "file), '\\t', toString(if(" p "kind = 2, " p "line, " p "addr)))"

/*
 * frame_sum.c's rows (gil_stacks, offcpu_stacks) of ITEMS (file_id, seq, label, ns, sid): each
 * item's stack's site and via frames (its `stack` row's; none: not counted), per label, site
 * and via frame the count and time, by time, then label, then the first item's place in the
 * file (frame_sum's order: sorted stably from the order the rows were first met); each row's
 * frames as the first item's.
 */
#define CH_FRAME_SUM(items)                                                                                      \
	"SELECT label, sname, spath, if(skind = 2, sline, 0), if(vfid = 0, NULL, vname), "                       \
	"if(vfid = 0, NULL, vpath), if(vfid = 0, NULL, if(vkind = 2, vline, 0)), cnt, total "                    \
	"FROM (SELECT label, sk, vk, count() AS cnt, sum(ns) AS total, min(o) AS first, "                        \
	"argMin(sname, o) AS sname, argMin(spath, o) AS spath, argMin(skind, o) AS skind, "                      \
	"argMin(sline, o) AS sline, argMin(vfid, o) AS vfid, argMin(vname, o) AS vname, "                        \
	"argMin(vpath, o) AS vpath, argMin(vkind, o) AS vkind, argMin(vline, o) AS vline FROM ("                 \
	"SELECT label, ns, (file_id, seq) AS o, vfid, sname, spath, skind, sline, vname, vpath, "                \
	"vkind, vline, " CH_SITE_KEY("s") " AS sk, if(vfid = 0, '', " CH_SITE_KEY(                               \
		"v") ") AS vk FROM (SELECT * FROM (SELECT * FROM (SELECT file_id, seq, label, ns, "              \
		     "sfid, vfid FROM (" items                                                                   \
		     ") AS lhs ALL INNER JOIN (SELECT file_id, sid, ids[site] AS "                               \
		     "sfid, if(via > 0, ids[via], toUInt64(0)) AS vfid FROM (" CH_STACK_ROWS                     \
		     ") WHERE kernel = 0 AND site > 0) AS jc4 USING file_id, sid) AS lhs ANY LEFT JOIN ("        \
		     "" CH_FRAME_ROWS("s") ") AS jc5 USING file_id, sfid) AS lhs ANY LEFT JOIN (" CH_FRAME_ROWS( \
			     "v") ") AS jc6 USING file_id, vfid)) GROUP BY label, sk, vk) "                      \
				  "ORDER BY total DESC, label, first FORMAT TabSeparated"

/* frame_sum__emit's columns after the label's. */
#define CH_FRAME_SUM_COLS                                                                          \
	{ "func", "Function", 't' }, { "file", "File", 't' }, { "line", "Line", 'u' },             \
		{ "via_func", "Via", 't', 1 }, { "via_file", "Via File", 't', 1 },                 \
		{ "via_line", "Via Line", 'u', 1 }, { "count", "Count", 'u' },                     \
		{ "total_ns", "Total (ns)", 'u' },                                                 \
	{                                                                                          \
	}

/* An event's stack id, where it has one (--stacks=...). */
#define CH_SID                                                                                     \
	"visitParamExtractUInt(args, 'stack_id') AS sid FROM " CH_DB ".events WHERE {W} AND "      \
	"position(args, '\"stack_id\":') > 0 AND "

/* An argument of a row's args: unsigned, signed. */
#define CH_ARG_U(k) "visitParamExtractUInt(args, '" k "')"
#define CH_ARG_S(k) "visitParamExtractInt(args, '" k "')"
/* A merged file's process or thread id as its reports show it: with its rank namespace. */
#define CH_RANK_NS_ID(id) "bitOr(bitShiftLeft(ns, 22), " id ")"
/* ID as its host saw it, less a merged file's rank namespace (trace_ranks__host_pid). */
#define CH_HOST_ID(id) "bitAnd(" id ", 4194303)"
/* Each shipped file's rank namespaces, by the rank file its rows are labelled with. */
#define CH_RANK_NS                                                                                 \
	"SELECT file_id, file, max(" CH_ARG_U(                                                     \
		"ns") ") AS ns "                                                                   \
		      "FROM " CH_DB                                                                \
		      ".events WHERE {J} AND kind = 'thread_names' GROUP BY file_id, file"

/* A signed arg, -1 when the row has none. */
#define CH_INT_OR_NONE(key)                                                                        \
	"if(position(args, '\"" key "\":') > 0, visitParamExtractInt(args, '" key "'), -1)"
#define CH_HAS(key) "position(args, '\"" key "\":') > 0"

/* The uprobe-API families' call rows (struct family.api: proc_edges' and nccl_hang's calls). */
#define CH_API_KINDS "kind IN ('blas_api', 'cublas_api', 'cuda_api', 'cudnn_api', 'nccl_api')"

#endif /* BPFSIGHT_CH_SQL_H */
