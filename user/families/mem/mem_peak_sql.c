// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_peak (mem_peak_report.c) as SQL (ch_reports.h), in what ClickHouse 18.16 runs: what was
 * live at each (process, device)'s peak, by the allocation's site (mem_site.h) and the torch
 * op around it.
 *
 * The live set is replayed as mem_log.c keeps it, from the `mem_alloc` rows: the peak is the
 * first allocation at the device's most live bytes (each row's `live`, the decoder's running
 * count by mem_live.c, the same C as stats'); a block lives from its allocation to the next
 * record at its address in the file's order (its free, or an allocation there again: its
 * free was lost), so the blocks live at the peak are the addresses whose last record up to
 * the peak is an allocation, a GROUP BY per address, no sort of the whole file. Each counts
 * for its weight (mem_alloc__weight: 1, 0 for a block not sampled, 1 / -expm1(-bytes / rate)
 * for a sampled one, as a float). Its site is CH_MEM_SITES' (the stack rows' site and via).
 * Most of its cost is 18.16 analysing the nested query, which analyses a join's left side
 * again: the heavy side of each join is the right one (ALL RIGHT JOIN, the left one row a key).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "mem.h"

static const struct ch_col ch_mem_peak_cols[] = {
	{ "pid", "PID", 'u' },
	{ "process", "Process", 't' },
	{ "device", "Device", 't' },
	{ "func", "Function", 't' },
	{ "file", "File", 't' },
	{ "line", "Line", 'u' },
	{ "via_func", "Via", 't' },
	{ "via_file", "Via File", 't' },
	{ "via_line", "Via Line", 'u' },
	{ "op", "Op", 't', 1 },
	{ "bytes", "Bytes (B)", 'u' },
	{ "blocks", "Blocks", 'u' },
	{ "sampled", "Sampled", 'u' },
	{ "peak_pct", "Of Peak (%)", 'd' },
	{ "peak_bytes", "Peak (B)", 'u' },
	{ "peak_ts", "Peak At (ns)", 'u' },
	{},
};

/*
 * A process is keyed by its file (a merged file's rows are its ranks' files: two ranks' pids
 * may be equal there, without their rank namespace), its pid and device; a thread so too.
 */

/* mem_log's records: the allocations of bytes and the frees, by process, device, address. */
#define CH_MEM_RECS                                                                                \
	"SELECT file_id, file, pid, visitParamExtractString(args, 'device') AS device, seq, ts, "  \
	"tid, name = 'free' AS fr, visitParamExtractString(args, 'addr') AS addr, args FROM "      \
	"" CH_DB ".events WHERE {W} AND kind = 'mem_alloc' AND (name = 'free' OR "                 \
	"visitParamExtractUInt(args, 'bytes') > 0)"

/*
 * Each process's device: its peak (the most live bytes, > 0), the first allocation that
 * reached it (pseq, its time pts) and its first record (its order among equal peaks: mem_log's
 * device index). Every record counts for the order, a 0-byte allocation too.
 */
#define CH_MEM_PEAKS                                                                               \
	"SELECT file_id, file, pid, device, max(lv) AS peak, argMax(seq, (lv, 0 - toInt64(seq))) " \
	"AS pseq, argMax(ts, (lv, 0 - toInt64(seq))) AS pts, min(seq) AS dfirst FROM (SELECT "     \
	"file_id, file, pid, visitParamExtractString(args, 'device') AS device, seq, ts, if(name " \
	"= 'alloc' AND visitParamExtractUInt(args, 'bytes') > 0, visitParamExtractUInt(args, "     \
	"'live'), toUInt64(0)) AS lv FROM " CH_DB ".events WHERE {W} AND kind = 'mem_alloc') "     \
	"GROUP BY file_id, file, pid, device HAVING peak > 0"

/*
 * The blocks live at their device's peak: per address its last record up to the peak, an
 * allocation; its bytes, weight (mem_alloc__weight, as a float: -expm1(-x) by its series
 * below 0.01, where 1 - exp(-x) loses digits), stack, whether made before stacks, thread, time.
 */
#define CH_MEM_LIVE                                                                                \
	"SELECT file_id, file, pid, device, peak, pseq, pts, dfirst, tupleElement(last, 2) AS "    \
	"eseq, tupleElement(last, 3) AS ets, tupleElement(last, 4) AS etid, tupleElement(last, "   \
	"5) AS a, visitParamExtractUInt(a, 'bytes') AS bytes, visitParamExtractUInt(a, "           \
	"'sample_rate') AS rate, visitParamExtractBool(a, 'early') AS early, toFloat64(bytes) / "  \
	"if(rate = 0, 1, rate) AS x, toFloat64(if(rate = 0 OR early, toFloat32(1), "               \
	"if(visitParamExtractBool(a, 'sampled') = 0, toFloat32(0), toFloat32(1 / if(x < 0.01, x "  \
	"* (1 - x / 2 * (1 - x / 3 * (1 - x / 4 * (1 - x / 5 * (1 - x / 6 * (1 - x / 7)))))), 1 "  \
	"- exp(0 - x)))))) AS w, if(early, toUInt64(0), visitParamExtractUInt(a, 'stack_id')) AS " \
	"sid FROM (SELECT file_id, file, pid, device, addr, peak, pseq, pts, dfirst, "             \
	"argMax((fr, seq, ts, tid, args), seq) AS last FROM (" CH_MEM_RECS                         \
	") AS lhs ALL INNER JOIN ("                                                                \
	"" CH_MEM_PEAKS                                                                            \
	") AS jp1 USING file_id, file, pid, device WHERE seq <= pseq GROUP BY file_id, "           \
	"file, pid, device, addr, peak, pseq, pts, dfirst) WHERE tupleElement(last, 1) = 0 AND w " \
	"> 0"

/*
 * torch's ops (mem_peak_report.c keeps those recorded after the file's first allocation):
 * their thread, depth, start, end and name.
 */
#define CH_MEM_OP_ROWS                                                                                 \
	"SELECT * FROM (SELECT file_id, file, seq, tid AS etid, visitParamExtractUInt(args, "          \
	"'depth') AS dep, ts AS os, ts + toInt64(dur) AS oe, name AS oname FROM " CH_DB ".events "     \
	"WHERE {W} AND kind = 'torch_op') AS lhs ALL INNER JOIN (SELECT file_id, min(seq) AS afirst "  \
	"FROM " CH_DB ".events WHERE {W} AND kind = 'mem_alloc' AND name = 'alloc' AND "               \
	"visitParamExtractUInt(args, 'bytes') > 0 GROUP BY file_id) AS jp2 USING file_id WHERE seq > " \
	"afirst"

/* Each thread's ops of one depth numbered by start (k, from 1), the longer first. */
#define CH_MEM_OPS_NUMBERED                                                                        \
	"SELECT file_id, file, etid, dep, toUInt64(kk) AS k, tupleElement(o, 3) AS oe, "           \
	"tupleElement(o, 4) AS oname FROM (SELECT file_id, file, etid, dep, "                      \
	"arraySort(groupArray((os, 0 - oe, oe, oname))) AS ol FROM (" CH_MEM_OP_ROWS ") GROUP BY " \
	"file_id, file, etid, dep) ARRAY JOIN ol AS o, arrayEnumerate(ol) AS kk"

/* Each block with its site: 0 no stack, 1 before stacks, 2 a line (kf, kv: its frames). */
#define CH_MEM_SITED_COLS                                                                          \
	"file_id, file, pid, device, peak, pts, dfirst, eseq, bytes, w, sclass, kf, kv, sname, "   \
	"spath, skind, sline, vname, vpath, vkind, vline"
#define CH_MEM_SITED                                                                               \
	"SELECT file_id, file, pid, device, peak, pts, dfirst, eseq, bytes, w, if(early, 1, "      \
	"if(sfid > 0, 2, 0)) AS sclass, if(sclass = 2, sfid, toUInt64(0)) AS kf, if(sclass = 2, "  \
	"vfid, toUInt64(0)) AS kv, sname, spath, skind, sline, vname, vpath, vkind, vline FROM ("  \
	"" CH_MEM_SITES ") AS lhs ALL RIGHT JOIN (" CH_MEM_LIVE ") AS jp3 USING file_id, sid"

/* Each site's first block in the file's order: mem_sites numbers them as first met. */
#define CH_MEM_SITE_ORDER                                                                          \
	"SELECT file_id, if(early, 1, if(sfid > 0, 2, 0)) AS sclass, if(sclass = 2, sfid, "        \
	"toUInt64(0)) AS kf, if(sclass = 2, vfid, toUInt64(0)) AS kv, min(eseq) AS sfirst FROM ("  \
	"" CH_MEM_LIVE ") AS lhs ANY LEFT JOIN (" CH_MEM_SITE_IDS                                  \
	") AS jp4 USING file_id, sid GROUP BY "                                                    \
	"file_id, sclass, kf, kv"

/*
 * The innermost op around each block, by a sweep per thread and depth (ops of one depth do
 * not overlap): the block's time among the ops' starts sorted, the running count of starts
 * the last op begun (k); it holds the block when it ends after it; the deepest that does is
 * the innermost, the one the pass's walk back meets first. O(n log n) a thread, where
 * matching every op against every block would hold each thread's ops once per block.
 */
#define CH_MEM_OP_OF                                                                               \
	"SELECT file_id, eseq, argMax(oname, dep) AS opname FROM (SELECT * FROM (SELECT file_id, " \
	"file, etid, dep, tupleElement(e, 1) AS t, tupleElement(e, 4) AS eseq, toUInt64(kk) AS k " \
	"FROM (SELECT file_id, file, etid, dep, arraySort(groupArray((t, typ, ne, eseq))) AS ev "  \
	"FROM (SELECT file_id, file, etid, dep, os AS t, toUInt8(0) AS typ, 0 - oe AS ne, "        \
	"toUInt64(0) AS eseq FROM (" CH_MEM_OP_ROWS ") UNION ALL SELECT file_id, file, etid, "     \
	"dep, ets AS t, toUInt8(1) AS typ, toInt64(0) AS ne, eseq FROM (" CH_MEM_LIVE              \
	") AS lhs ALL "                                                                            \
	"INNER JOIN (SELECT DISTINCT file_id, file, etid, dep FROM (" CH_MEM_OP_ROWS               \
	")) AS jp5 USING "                                                                         \
	"file_id, file, etid) GROUP BY file_id, file, etid, dep) ARRAY JOIN ev AS e, "             \
	"arrayCumSum(arrayMap(x -> toUInt64(tupleElement(x, 2) = 0), ev)) AS kk WHERE "            \
	"tupleElement(e, 2) = 1 AND kk > 0) AS lhs ALL INNER JOIN (" CH_MEM_OPS_NUMBERED           \
	") AS jp6 USING "                                                                          \
	"file_id, file, etid, dep, k WHERE oe > t) GROUP BY file_id, eseq"

/* Each block with the innermost op around it (its name, '' for none). */
#define CH_MEM_OPPED                                                                               \
	"SELECT " CH_MEM_SITED_COLS ", opname FROM (" CH_MEM_OP_OF ") AS lhs ALL RIGHT JOIN ("     \
	"" CH_MEM_SITED ") AS jp7 USING file_id, eseq"

/* Per file, device, site and op: the blocks' bytes and count. */
#define CH_MEM_PEAK_ROWS                                                                           \
	"SELECT file_id, file, pid, device, sclass, kf, kv, opname, any(peak) AS dpeak, any(pts) " \
	"AS dts, any(dfirst) AS dorder, sum(toFloat64(bytes) * w) AS b, sum(w) AS n, countIf(w > " \
	"1) AS nsmp, any(sname) AS fn, any(spath) AS fp, any(if(skind = 2, sline, 0)) AS fl, "     \
	"any(vname) AS vn, any(vpath) AS vp, any(if(vkind = 2, vline, 0)) AS vl FROM ("            \
	"" CH_MEM_OPPED ") GROUP BY file_id, file, pid, device, sclass, kf, kv, opname"

/*
 * Each process as the file's reports show it (its threads' `thread_names` rows): its rank
 * namespace, its name (NULL: none), and its file's clock shift (the `trace_window` row's: the
 * peak's time on CLOCK_MONOTONIC, as stats shows it).
 */
#define CH_MEM_PROCS                                                                                     \
	"SELECT * FROM (SELECT file_id, file, pid, any(" CH_NAMES_NS ") AS ns, "                         \
	"if(countIf(position(args, '\"process\":') > 0) > 0, anyIf(visitParamExtractString(args, "       \
	"'process'), position(args, '\"process\":') > 0), NULL) AS process FROM " CH_DB                  \
	".events WHERE {J} AND kind = 'thread_names' GROUP BY file_id, file, pid) AS lhs ANY LEFT JOIN " \
	"(SELECT file_id, visitParamExtractInt(args, 'clock_shift') AS shift FROM " CH_DB                \
	".events WHERE {J} AND kind = 'trace_window') AS jp8 USING file_id"

/*
 * The rows as stats' (a site 0 or before stacks has its function alone; a via frame, its
 * columns), by the device's peak, its first record, bytes, the site's first block, the op
 * (stats orders equal ops by their string ids, the rows by name).
 */
#define CH_MEM_PEAK_SQL                                                                                                                                                                              \
	"SELECT " CH_NS_ID(                                                                                                                                                                          \
		"pid") " AS xpid, process, device, multiIf(sclass = 0, '(no stack)', "                                                                                                               \
		       "sclass = 1, '(before stacks)', fn), if(sclass = 2, fp, NULL), if(sclass = 2, fl, NULL), "                                                                                    \
		       "if(sclass = 2 AND kv > 0, vn, NULL), if(sclass = 2 AND kv > 0, vp, NULL), if(sclass = 2 "                                                                                    \
		       "AND kv > 0, vl, NULL), if(opname = '', NULL, opname), toUInt64(floor(b + 0.5)), "                                                                                            \
		       "toUInt64(floor(n + 0.5)), if(nsmp > 0, nsmp, NULL), 100 * b / dpeak, dpeak, dts - shift "                                                                                    \
		       "FROM (" CH_MEM_PROCS                                                                                                                                                         \
		       ") AS lhs ALL RIGHT JOIN (SELECT file_id, file, pid, device, sclass, kf, kv, opname, dpeak, dts, dorder, b, n, nsmp, fn, fp, fl, vn, vp, vl, sfirst FROM (" CH_MEM_SITE_ORDER \
		       ") AS lhs ALL RIGHT "                                                                                                                                                         \
		       "JOIN (" CH_MEM_PEAK_ROWS                                                                                                                                                     \
		       ") AS jp9 USING file_id, sclass, kf, kv) AS jp10 USING file_id, file, pid "                                                                                                   \
		       "ORDER BY dpeak DESC, file_id, dorder, b DESC, sclass, sfirst, opname FORMAT TabSeparated"

const struct ch_report ch_mem_peak = {
	.name = "mem_peak",
	.cols = ch_mem_peak_cols,
	.sql = CH_MEM_PEAK_SQL,
	.needs = "mem_alloc",
};
