// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu's report, rule's input and folded lines as SQL in the server (stats --from, stacks
 * --from, docs/CLICKHOUSE.md): cpu_sum (cpu_report.c's: the CPU samples by function, self and
 * total), the fault rule's state per process (cpu_fault_procs, cpu_fault_verdict.c's), and the
 * samples' folded lines (export --format folded's). A stack's frames are its `stack` row's
 * `frames`, each frame a `frame` row (export_clickhouse.c).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "cpu.h"

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
static const struct ch_report ch_cpu_sum = {
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
static const struct ch_report ch_cpu_fault_procs = {
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

/*
 * export --format folded's lines (`stacks --from`): the CPU samples (`cpu_sample` rows, their
 * `stack_id` and whether in kernel code) counted by their stack's folded text (the file's
 * `stack` rows), one line per text, sorted as strcmp sorts.
 */
static const struct ch_report ch_folded_stacks = {
	.name = "folded",
	.cols = ch_folded_cols,
	.sql = "SELECT text, count() FROM (SELECT file_id, visitParamExtractUInt(args, 'stack_id') "
	       "AS sid, toUInt8(name = 'kernel') AS kernel FROM " CH_DB ".events WHERE {W} AND "
	       "kind = 'cpu_sample') AS lhs ANY LEFT JOIN (SELECT file_id, visitParamExtractUInt(args, "
	       "'stack_id') AS sid, toUInt8(visitParamExtractUInt(args, 'kernel')) AS kernel, "
	       "name AS text FROM " CH_DB ".events WHERE {J} AND kind = 'stack') AS jr8 "
	       "USING file_id, sid, kernel GROUP BY text ORDER BY text FORMAT TabSeparated",
};

static const struct ch_report *const cpu_sql_reports[] = {
	&ch_cpu_sum,
	NULL,
};

static const struct ch_report *const cpu_sql_inputs[] = {
	&ch_cpu_fault_procs,
	&ch_folded_stacks,
	NULL,
};

/* cpu's SQL (struct family.sql). */
const struct family_sql cpu_sql = {
	.reports = cpu_sql_reports,
	.inputs = cpu_sql_inputs,
};
