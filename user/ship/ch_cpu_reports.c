// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports over the events' stacks as SQL (ch_reports.h), in what ClickHouse 18.16 runs:
 * cpu_sum (the CPU samples by function, self and total), gil_stacks and offcpu_stacks (the
 * time by the stack's line in the job's code), and the cpu family's fault rule's state per
 * process (cpu_fault_procs). A stack's frames are its `stack` row's `frames`, their ids
 * innermost first, each frame a `frame` row (export_clickhouse.c): its function as its name,
 * its kind, function and file string ids, line, address and file; a stack's frame_sum site
 * and via its `site` and `via` (1-based places in `frames`).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "ch_verdict.h"

static const struct ch_col ch_cpu_sum_cols[] = {
	{ "func", "Function", 't' },	   { "file", "File", 't' },
	{ "line", "Line", 'u' },	   { "self_samples", "Self", 'u' },
	{ "total_samples", "Total", 'u' }, { "self_pct", "Self (%)", 'd' },
	{ "total_pct", "Total (%)", 'd' }, {},
};

/*
 * Every frame of the CPU samples' stacks, per stack and in-kernel flag (N samples): its place
 * I, its frame's columns (c...), and func_sum.c's row (func_key) K: the shipped file, kind,
 * function and file ids, and a named Python frame's line, an unnamed frame's address, a
 * marker's reason (a merged file's ranks' ids are their own: their rows apart, as stats has
 * them). A sample in kernel code has the kernel's frame first (id 0, kind 0x100: one row); a
 * stack not read counts there only.
 */
#define CH_CPU_FRAMES                                                                                 \
	"SELECT file_id, sid, kernel, n, i, if(cfid = 0, 256, ckind) AS fkind, "                      \
	"if(cfid = 0, '[kernel]', cname) AS fname, cpath AS fpath, cfunc, cfile, cline, caddr, "      \
	"if(fkind = 2, cline, 0) AS pyline, concat(if(cfid = 0, '', file_id), '\\t', "                \
	"toString(fkind), '\\t', toString(cfunc), '\\t', toString(cfile), '\\t', "                    \
	"toString(if(cfunc != 0, pyline, if(fkind = 3, cline, caddr)))) AS k FROM (SELECT file_id, "  \
	"sid, kernel, n, fid AS cfid, i FROM (SELECT file_id, sid, kernel, n, "                       \
	"arrayConcat(if(kernel = 1, [toUInt64(0)], emptyArrayUInt64()), ids) AS fl FROM ("            \
	"SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS sid, toUInt8(name = "             \
	"'kernel') AS kernel, count() AS n FROM " CH_DB ".events WHERE {W} AND "                      \
	"kind = 'cpu_sample' GROUP BY file_id, sid, kernel) AS lhs ANY LEFT JOIN (" CH_STACK_ROWS     \
	") AS jc1 USING file_id, sid, kernel) ARRAY JOIN fl AS fid, arrayEnumerate(fl) AS i) AS lhs " \
	"ANY LEFT JOIN (" CH_FRAME_ROWS("c") ") AS jc2 USING file_id, cfid"

/*
 * cpu_sum (cpu_report.c, func_sum.c; stats' JSON rows: no grouping for people): per stack and
 * function the samples if it is the first frame (self), and once however deep it recurses
 * (total); summed per function, ordered as cpu_row_cmp orders them (self, total, kind,
 * function id, file id, line, address), then by the shipped file (files shipped on their own).
 */
const struct ch_report ch_cpu_sum = {
	.name = "cpu_sum",
	.cols = ch_cpu_sum_cols,
	.sql = "SELECT func, file, line, self, total, self * 100 / nall, total * 100 / nall FROM ("
	       "SELECT k, any(sname) AS func, any(spath) AS file, any(sline) AS line, "
	       "sum(s) AS self, sum(t) AS total, any(skind) AS o1, min(ofunc) AS o2, "
	       "min(ofile) AS o3, any(oline) AS o4, min(oaddr) AS o5 FROM (SELECT file_id, sid, "
	       "kernel, k, max(i = 1) * any(n) AS s, any(n) AS t, any(fname) AS sname, "
	       "any(fpath) AS spath, any(pyline) AS sline, any(fkind) AS skind, "
	       "min(cfunc) AS ofunc, min(cfile) AS ofile, any(cline) AS oline, "
	       "min(caddr) AS oaddr FROM (" CH_CPU_FRAMES ") GROUP BY file_id, sid, kernel, k) "
	       "GROUP BY k) AS lhs CROSS JOIN (SELECT count() AS nall FROM " CH_DB
	       ".events WHERE {W} AND kind = 'cpu_sample') AS jc3 "
	       "ORDER BY self DESC, total DESC, o1, o2, o3, o4, o5, k FORMAT TabSeparated",
	.needs = "cpu_sample", /* the samples by stack */
};

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

static const struct ch_col ch_gil_stacks_cols[] = {
	{ "role", "Role", 't' },
	CH_FRAME_SUM_COLS,
};

/* An event's stack id, where it has one (--stacks=...). */
#define CH_SID                                                                                     \
	"visitParamExtractUInt(args, 'stack_id') AS sid FROM " CH_DB ".events WHERE {W} AND "      \
	"position(args, '\"stack_id\":') > 0 AND "

/*
 * gil_stacks (gil_stacks_report.c): "holder" rows weighed by gil_holder_ns (a round of waits
 * less what the holder's samples covered, a sample's waiting), "waiter" rows by the waits.
 */
const struct ch_report ch_gil_stacks = {
	.name = "gil_stacks",
	.cols = ch_gil_stacks_cols,
	.sql = CH_FRAME_SUM(
		"SELECT file_id, seq, label, ns, sid FROM (SELECT file_id, seq, 'holder' AS label, "
		"if(kind = 'gil_sample', dur, if(dur > cov, toUInt64(dur - cov), toUInt64(0))) AS "
		"ns, visitParamExtractUInt(args, 'covered_us') * 1000 AS cov, " CH_SID
		"kind IN ('gil_holder', 'gil_sample')) WHERE ns > 0 UNION ALL SELECT file_id, seq, "
		"'waiter' AS label, dur AS ns, " CH_SID "kind = 'gil_wait'"),
	.needs = "gil_holder,gil_sample,gil_wait", /* the items it weighs */
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
const struct ch_report ch_offcpu_stacks = {
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

static const struct ch_col ch_fault_cols[] = {
	{ "pid", "PID", 'u' },
	{ "samples", "Samples", 'u' },
	{ "fault", "In Faults", 'u' },
	{ "calls", "In Memory Calls", 'u' },
	{ "trim", "Heap Trims", 'u' },
	{ "unmap", "Block Frees", 'u' },
	{ "first", "First Mem", 's' },
	{ "last", "Last Mem", 's' },
	{ "grown", "Grown", 'u' },
	{ "given", "Given Back", 'u' },
	{ "big", "Big Blocks", 'u' },
	{ "largest", "Largest", 'u' },
	{ "peak_rss", "Peak RSS", 'u' },
	{ "mem_rows", "Mem Records", 'u' },
	{},
};

/* A native frame named one of NAMES ("brk|sbrk"), as cpu_fault_verdict.c's frame_in says. */
#define CH_NAMED(names) "(ckind = 1 AND cfunc != 0 AND match(cname, '^(__)?(" names ")([.].*)?$'))"
/*
 * Of a kernel sample's stack (its 8 innermost frames): in a memory call (one of its first
 * two), and what made it (the first frame in glibc's heap trim, 1, or a block's free, 2).
 */
#define CH_FAULT_STACKS                                                                                                                                                                                                                   \
	"SELECT file_id, sid, toUInt8(1) AS kernel, max(i <= 2 AND " CH_NAMED(                                                                                                                                                            \
		"brk|sbrk|munmap|madvise|mmap|mmap64|mremap") ") AS incall, "                                                                                                                                                             \
							      "argMinIf(if(" CH_NAMED(                                                                                                                                                    \
								      "systrim|heap_trim|shrink_"                                                                                                                                         \
								      "heap") ", 1, 2), i, " CH_NAMED("systrim|heap_trim|shrink_heap") " OR " CH_NAMED("munmap_chunk") ") AS how FROM (SELECT file_id, sid, fid AS cfid, i FROM (SELECT " \
																				       "file_id, sid, arraySlice(ids, 1, 8) AS fl FROM (" CH_STACK_ROWS   \
																				       ") WHERE kernel = 1) ARRAY JOIN fl AS fid, arrayEnumerate(fl) AS " \
																				       "i) AS lhs ANY LEFT JOIN (" CH_FRAME_ROWS(                         \
																					       "c") ") AS jc9 USING file_id, cfid "                       \
																						    "GROUP BY file_id, sid"
/* The mem family's records the rule sizes the churn by, per process. */
#define CH_FAULT_MEM                                                                               \
	"SELECT file_id, file, pid, count() AS mem, min(ts) AS first, max(ts) AS last, "           \
	"sumIf(b, kind = 'mem_grow') AS grown, sumIf(b, kind = 'mem_shrink') AS given, "           \
	"countIf(kind = 'mem_alloc') AS big, maxIf(b, kind = 'mem_alloc') AS largest, "            \
	"max(visitParamExtractUInt(args, 'rss')) AS peak_rss FROM (SELECT file_id, file, pid, "    \
	"kind, ts, args, visitParamExtractUInt(args, 'bytes') AS b FROM " CH_DB ".events WHERE "   \
	"{W} AND (kind IN ('mem_grow', 'mem_shrink', 'mem_rss') OR (kind = 'mem_alloc' AND "       \
	"name = 'alloc' AND visitParamExtractString(args, 'device') = 'cpu' AND "                  \
	"visitParamExtractUInt(args, 'bytes') >= 131072))) GROUP BY file_id, file, pid"

/*
 * cpu's fault rule (cpu_fault_verdict.c) per process: its CPU samples, those in a page fault,
 * the kernel ones in a call that maps or unmaps memory and what made it; the mem family's
 * records of it (0 when none).
 */
const struct ch_report ch_cpu_fault_procs = {
	.name = "cpu_fault_procs",
	.cols = ch_fault_cols,
	.sql = "SELECT " CH_NS_ID(
		"pid") ", samples, fault, calls, trim, unmap, first, last, grown, "
		       "given, big, largest, peak_rss, mem FROM (SELECT * FROM (SELECT file_id, "
		       "file, pid, sum(n) AS samples, sumIf(n, pf = 1) AS fault, "
		       "sumIf(n, pf = 0 AND incall = 1) AS calls, sumIf(n, pf = 0 AND incall = 1 AND "
		       "how = 1) AS trim, sumIf(n, pf = 0 AND incall = 1 AND how = 2) AS unmap FROM ("
		       "SELECT file_id, file, pid, sid, kernel, pf, count() AS n FROM (SELECT file_id, "
		       "file, pid, visitParamExtractUInt(args, 'stack_id') AS sid, toUInt8(name = "
		       "'kernel') AS kernel, toUInt8(visitParamExtractBool(args, 'page_fault')) AS pf "
		       "FROM " CH_DB ".events WHERE {W} AND kind = 'cpu_sample') "
		       "GROUP BY file_id, file, pid, sid, kernel, pf) AS lhs ANY LEFT JOIN (" CH_FAULT_STACKS
		       ") AS jc10 USING file_id, sid, kernel GROUP BY file_id, file, pid) AS lhs ANY LEFT JOIN (" CH_FAULT_MEM
		       ") AS jc11 USING file_id, file, pid) AS lhs ANY LEFT JOIN (SELECT file_id, file, pid, "
		       "any(visitParamExtractUInt(args, 'ns')) AS ns FROM " CH_DB
		       ".events WHERE {J} AND "
		       "kind = 'thread_names' GROUP BY file_id, file, pid) AS jc12 USING file_id, file, pid "
		       "ORDER BY 1 FORMAT TabSeparated",
	.needs = "cpu_sample", /* the samples by process */
};
