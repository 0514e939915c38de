// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports over the events' stacks as SQL (ch_reports.h), in what ClickHouse 18.16 runs:
 * cpu_sum (the CPU samples by function, self and total), gil_stacks and offcpu_stacks (the
 * time by the stack's line in the job's code), and the cpu family's fault rule's state per
 * process (cpu_fault_procs). Each stack's frames are its `stack` row's `frames` (ch_labels.c:
 * innermost first, a line each, fields tab-separated: kind, function id, file id, line,
 * address, function, file), which SQL splits; a stack's frame_sum site and via its `site` and
 * `via` (1-based).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "ch_verdict.h"

/* A frame's field I (1: kind, 2: function id, 3: file id, 4: line, 5: address, 6: function,
 * 7: file) of frame text X. */
#define CH_FR(x, i) "splitByChar('\\t', " x ")[" #i "]"

/* Each file's stacks: their id, whether a CPU sample's in kernel code, their frames. */
#define CH_STACK_ROWS                                                                              \
	"SELECT file_id, visitParamExtractUInt(args, 'stack_id') AS sid, "                         \
	"toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, "                               \
	"visitParamExtractString(args, 'frames') AS fr, visitParamExtractUInt(args, 'site') AS "   \
	"site, visitParamExtractUInt(args, 'via') AS via FROM " CH_DB ".events WHERE {J} AND "     \
	"kind = 'stack'"

/*
 * func_sum.c's row of a frame (func_key), by what tells it apart for people so that files'
 * rows add up as a merged file's: its kind, function and file as stats shows them, and a
 * named Python frame's line (an unnamed frame's function shows its address, a marker's why).
 */
#define CH_FUNC_KEY(x)                                                                             \
	"concat(" CH_FR(x, 1) ", '\\t', " CH_FR(x, 6) ", '\\t', " CH_FR(                           \
		x, 7) ", '\\t', if(" CH_FR(x,                                                      \
					   1) " = '2' AND " CH_FR(x,                               \
								  2) " != '0', " CH_FR(x,          \
										       4) ", ''))"

/* The kernel's frame func_sum.c puts first in a sample taken in kernel code (kind 0x100). */
#define CH_KERNEL_FRAME "'256\\t0\\t0\\t0\\t0\\t[kernel]\\t'"

static const struct ch_col ch_cpu_sum_cols[] = {
	{ "func", "Function", 't' },	   { "file", "File", 't' },
	{ "line", "Line", 'u' },	   { "self_samples", "Self", 'u' },
	{ "total_samples", "Total", 'u' }, { "self_pct", "Self (%)", 'd' },
	{ "total_pct", "Total (%)", 'd' }, {},
};

/*
 * cpu_sum (cpu_report.c, func_sum.c, stats' JSON rows: no grouping for people): the samples
 * per stack and in-kernel flag, each stack's frames (a sample in kernel code with the kernel's
 * frame first, a stack not read counting only there); per function the samples whose first
 * frame it is (self), and those it is on the stack of, once per stack however deep it
 * recurses (arrayEnumerateUniq: its first place); ordered as cpu_row_cmp orders them.
 */
const struct ch_report ch_cpu_sum = {
	.name = "cpu_sum",
	.cols = ch_cpu_sum_cols,
	.sql = "SELECT func, file, line, self, total, self * 100 / nall, total * 100 / nall FROM ("
	       "SELECT k, any(fname) AS func, any(fpath) AS file, any(pyline) AS line, "
	       "sum(if(i = 1, n, 0)) AS self, sum(if(u = 1, n, 0)) AS total, any(fkind) AS kk, "
	       "min(fid) AS ffid, min(ffile) AS fffile, any(fline) AS ffline, min(faddr) AS ffaddr "
	       "FROM (SELECT n, k, i, u, toUInt32(" CH_FR("f", 1) ") AS fkind, toUInt64OrZero(" CH_FR("f", 2) ") AS fid, toUInt64OrZero(" CH_FR(
		       "f",
		       3) ") AS ffile, "
			  "toUInt64OrZero(" CH_FR("f", 4) ") AS fline, toUInt64OrZero(" CH_FR("f", 5) ") AS faddr, " CH_FR("f", 6) " AS fname, " CH_FR(
				  "f",
				  7) " AS fpath, "
				     "if(fkind = 2, fline, 0) AS pyline FROM ("
				     "SELECT n, arrayConcat(if(kernel = 1, [" CH_KERNEL_FRAME
				     "], emptyArrayString()), if(fr = '', emptyArrayString(), splitByChar('\\n', fr))) "
				     "AS fl, arrayMap(x -> " CH_FUNC_KEY(
					     "x") ", fl) AS ks FROM (SELECT file_id, "
						  "visitParamExtractUInt(args, 'stack_id') AS sid, toUInt8(name = 'kernel') AS "
						  "kernel, count() AS n FROM " CH_DB
						  ".events WHERE {W} AND kind = 'cpu_sample' "
						  "GROUP BY file_id, sid, kernel) ANY LEFT JOIN (" CH_STACK_ROWS
						  ") USING file_id, sid, kernel) "
						  "ARRAY JOIN fl AS f, ks AS k, arrayEnumerate(fl) AS i, arrayEnumerateUniq(ks) "
						  "AS u) GROUP BY k) CROSS JOIN (SELECT count() AS nall FROM " CH_DB
						  ".events WHERE {W} AND kind = 'cpu_sample') "
						  "ORDER BY self DESC, total DESC, kk, ffid, fffile, ffline, ffaddr "
						  "FORMAT TabSeparated",
};

/*
 * frame_sum.c's rows (gil_stacks, offcpu_stacks) of ITEMS (file_id, seq, label, ns, sid): each
 * item's stack's site and via frames (its `stack` row; none: not counted), per label, site and
 * via frame (what same_frame tells apart: a Python frame's line, a native one's address) the
 * count and time, by time, then label, then the first item's place in the file (frame_sum's
 * order: sorted stably from the order the rows were first met).
 */
#define CH_FRAME_SUM(items)                                                                                                                                  \
	"SELECT label, " CH_FR("sf", 6) ", " CH_FR("sf", 7) ", if(" CH_FR("sf", 1) " = '2', toUInt64OrZero(" CH_FR(                                          \
		"sf",                                                                                                                                        \
		4) "), 0), "                                                                                                                                 \
		   "if(vf = '', NULL, " CH_FR("vf", 6) "), if(vf = '', NULL, " CH_FR("vf", 7) "), if(vf = '', NULL, if(" CH_FR(                              \
			   "vf",                                                                                                                             \
			   1) " = '2', toUInt64OrZero(" CH_FR("vf",                                                                                          \
							      4) "), 0)), cnt, total FROM (SELECT label, sk, vk, argMin(sfr, (file_id, seq)) AS sf, "        \
								 "argMin(vfr, (file_id, seq)) AS vf, count() AS cnt, sum(ns) AS total, min((file_id, seq)) " \
								 "AS first FROM (SELECT label, ns, file_id, seq, "                                           \
								 "splitByChar('\\n', fr) AS fl, fl[site] AS sfr, if(via > 0, fl[via], "                      \
								 "'') AS vfr, " CH_SITE_KEY("sfr") " AS sk, " CH_SITE_KEY(                                   \
									 "vfr") " AS vk FROM (" items                                                        \
										") ANY INNER JOIN (SELECT * FROM (" CH_STACK_ROWS                            \
										") WHERE kernel = 0 AND site > 0) USING file_id, sid) "                      \
										"GROUP BY label, sk, vk) ORDER BY total DESC, label, "                       \
										"first FORMAT TabSeparated"
/*
 * same_frame's: kind, function (an unnamed one's none: a Python frame gone before it was read
 * is one row whatever its address), file, and a Python frame's line or another's address.
 */
#define CH_SITE_KEY(x)                                                                             \
	"concat(" CH_FR(x, 1) ", '\\t', if(" CH_FR(x, 2) " = '0', '', " CH_FR(                     \
		x,                                                                                 \
		6) "), '\\t', " CH_FR(x,                                                           \
				      7) ", '\\t', if(" CH_FR(x,                                   \
							      1) " = '2', " CH_FR(x,               \
										  4) ", " CH_FR(x, \
												5) "))"

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
		"if(kind = 'gil_sample', "
		"dur, if(dur > cov, toUInt64(dur - cov), toUInt64(0))) AS ns, "
		"visitParamExtractUInt(args, 'covered_us') * 1000 AS cov, " CH_SID
		"kind IN ('gil_holder', 'gil_sample')) WHERE ns > 0 UNION ALL SELECT file_id, seq, "
		"'waiter' AS label, dur AS ns, " CH_SID "kind = 'gil_wait'"),
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
		"SELECT file_id, file, pid, tid, seq, dur AS ns, " CH_SID "kind = 'offcpu') "
		"ANY LEFT JOIN (" CH_PROC_NAMES ") USING file_id, file, pid) ANY LEFT JOIN ("
		"SELECT file_id, file, pid, tid, position(args, '\"process\":') > 0 AS has_final, "
		"visitParamExtractString(args, 'process') AS final FROM " CH_DB ".events WHERE {J} "
		"AND kind = 'thread_names') USING file_id, file, pid, tid)"),
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
#define CH_NAMED(x, names)                                                                         \
	"(" CH_FR(x, 1) " = '1' AND " CH_FR(x, 2) " != '0' AND match(" CH_FR(                      \
		x, 6) ", '^(__)?(" names ")([.].*)?$'))"
/* Of a kernel sample's stack: in a memory call (its first two frames), and what made it (the
 * first of its 8 innermost frames in glibc's heap trim, 1, or a block's free, 2). */
#define CH_FAULT_STACKS                                                                                                                                              \
	"SELECT file_id, sid, kernel, arraySlice(splitByChar('\\n', fr), 1, 8) AS fl, "                                                                              \
	"arrayExists(x -> " CH_NAMED(                                                                                                                                \
		"x",                                                                                                                                                 \
		"brk|sbrk|munmap|madvise|mmap|mmap64|mremap") ", arraySlice(fl, 1, 2)) AS incall, "                                                                  \
							      "arrayFirst(c -> c > 0, arrayMap(x -> if(" CH_NAMED(                                                   \
								      "x",                                                                                           \
								      "systrim|heap_trim|shrink_heap") ", 1, "                                                       \
												       "if(" CH_NAMED(                                               \
													       "x",                                                  \
													       "munmap_"                                             \
													       "chunk") ", 2, 0)), fl)) AS how FROM (" CH_STACK_ROWS \
															") WHERE kernel = 1 AND fr != ''"
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
		       "GROUP BY file_id, file, pid, sid, kernel, pf) ANY LEFT JOIN (" CH_FAULT_STACKS
		       ") USING file_id, sid, kernel GROUP BY file_id, file, pid) ANY LEFT JOIN (" CH_FAULT_MEM
		       ") USING file_id, file, pid) ANY LEFT JOIN (SELECT file_id, file, pid, "
		       "any(visitParamExtractUInt(args, 'ns')) AS ns FROM " CH_DB
		       ".events WHERE {J} AND "
		       "kind = 'thread_names' GROUP BY file_id, file, pid) USING file_id, file, pid "
		       "ORDER BY 1 FORMAT TabSeparated",
};
