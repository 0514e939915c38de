// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_leaks (mem_leaks_report.c) as SQL in what ClickHouse 18.16 runs (ch_reports.h): what
 * stayed live by allocation site per process and device, and whether the site's live bytes
 * grew step after step. What SQL cannot derive well is computed once when the file is
 * rendered, by mem_leaks' own code (mem_rows.c): which allocation each free ended (`ends`),
 * a sampled block's weight (`w`), and each
 * device's boundaries (`mem_leak_steps`: its steps, its loop's passes or windows of its
 * allocations). The rest is here:
 * - a site is its stack's `site` and `via` frames (CH_MEM_SITE_IDS: the `stack` row's,
 *   frame_sum__own_site's, mem_site.c's own), told apart by their `frame` ids as mem_site
 *   tells frames apart; "(no stack)" without one, "(before stacks)" for an allocation made
 *   before stacks were taken (dump's `early`); their names from the `frame` rows, a file
 *   left unset where the frame has none (`"path":null`, which CH_FRAME_ROWS reads as "");
 * - an allocation counts at the boundaries from the first at or after it to the first at or
 *   after its end (every one to the last when it was never freed); per site, the changes of
 *   its live bytes at each boundary are one sumMap of +bytes and -bytes at those two places,
 *   so the boundaries it grew and fell at, what it grew by and kept, and the least-squares
 *   slope (the sum over changes of change * (k + 1 - j) * j / 2: each change counts at every
 *   later boundary; exact in doubles, as stats' own sum) come from the changes alone;
 * - judged by mem_leaks' rule (judge_row, why_not), ordered as it orders (growing first,
 *   steepest first, then by the bytes still live, then the device and the site as mem_log
 *   and mem_site met them: a site's first allocation in the file).
 * A device is its file's, rank's (a merged file's ranks' pids may share an id), process's and
 * device's. A file's live bytes are summed in its order (arraySort by seq), as stats sums them. 18.16
 * loses a column that only a lambda reads (ts, fts) from the subquery unless every query above
 * reads it too: `uses`, up to the last tie of the order (a site's rows never tie there).
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "mem.h"

static const struct ch_col ch_mem_leaks_cols[] = {
	{ "pid", "PID", 'u' },
	{ "process", "Process", 't' },
	{ "device", "Device", 't' },
	{ "func", "Function", 't' },
	{ "file", "File", 't' },
	{ "line", "Line", 'u' },
	{ "via_func", "Via", 't' },
	{ "via_file", "Via File", 't' },
	{ "via_line", "Via Line", 'u' },
	{ "live_bytes", "Live at End (B)", 'u' },
	{ "live_blocks", "Blocks", 'u' },
	{ "growth_per_step_bytes", "Growth/Step (B)", 'u' },
	{ "grew", "Grew", 'u' },
	{ "steps", "Steps", 'u' },
	{ "per", "Step", 't' },
	{ "step_ns", "Step Length (ns)", 'u' },
	{ "not_a_leak", "Not a Leak Because", 't' },
	{ "sampled", "Sampled", 'u' },
	{},
};

/* Each allocation counted at a site (its weight not 0), with its device's boundaries. */
#define CH_LEAK_ALLOCS                                                                                \
	"SELECT * FROM (SELECT * FROM (SELECT file_id, rank, pid, visitParamExtractString(args, "     \
	"'device') AS device, seq, ts, visitParamExtractUInt(args, 'bytes') AS bytes, "               \
	"if(position(args, '\"w\":') > 0, visitParamExtractFloat(args, 'w'), 1.) AS w, "              \
	"position(args, '\"early\":true') > 0 AS early, visitParamExtractUInt(args, "                 \
	"'stack_id') AS sid FROM " CH_DB ".events WHERE {W} AND kind = 'mem_alloc' AND "              \
	"name = 'alloc' AND bytes > 0 AND w != 0) AS lhs ANY LEFT JOIN (SELECT file_id, "             \
	"visitParamExtractUInt(args, 'ends') AS seq, ts AS fts, toUInt8(1) AS freed FROM " CH_DB      \
	".events WHERE {W} AND kind = 'mem_alloc' AND position(args, '\"ends\":') > 0) AS jl1 USING " \
	"file_id, seq) AS lhs ANY LEFT JOIN (" CH_MEM_SITE_IDS ") AS jl2 USING file_id, sid"

/* ... with its device's boundaries, its site and its changes at them: (places, bytes). */
#define CH_LEAK_CHANGES                                                                                             \
	"SELECT *, if(early, 1, if(sfid = 0, 0, 2)) AS skind, if(skind = 2, sfid, 0) AS sown, "                     \
	"if(skind = 2, vfid, 0) AS svia, arrayCount(x -> x < ts, bnd) AS jfrom, if(freed = 1, "                     \
	"arrayCount(x -> x < fts, bnd), k + 1) AS jto, toInt64(floor(bytes * w + 0.5)) AS b, "                      \
	"(k > 0 AND jfrom < jto) AS moves FROM (" CH_LEAK_ALLOCS                                                    \
	") AS lhs ANY LEFT JOIN (SELECT file_id, pid, visitParamExtractString(args, 'device') AS "                  \
	"device, rank, visitParamExtractUInt(args, 'index') AS dix, visitParamExtractUInt(args, 'k') "              \
	"AS k, visitParamExtractUInt(args, 'group') AS grp, visitParamExtractUInt(args, "                           \
	"'exited') AS exited, toUInt8(1) AS hasb, visitParamExtractUInt(args, 'step_ns') AS step_ns, name AS per, " \
	"arrayMap(x -> toInt64OrZero(x), splitByChar(',', visitParamExtractString(args, "                           \
	"'bounds'))) AS bnd FROM " CH_DB                                                                            \
	".events WHERE {W} AND kind = 'mem_leak_steps') AS jl3 USING "                                              \
	"file_id, rank, pid, device"

/*
 * Per process, device and site: its live bytes and blocks at the end (summed in the file's
 * order), its sampled allocations, its first allocation, its changes (K places, V bytes).
 */
#define CH_LEAK_SITES                                                                                   \
	"SELECT file_id, rank, pid, device, dix, k, grp, exited, hasb, step_ns, per, skind, sown, "     \
	"svia, "                                                                                        \
	"arraySum(arraySort((x, s) -> s, groupArrayIf(bytes * w, freed = 0), groupArrayIf(seq, "        \
	"freed = 0))) AS lb, arraySum(arraySort((x, s) -> s, groupArrayIf(w, freed = 0), "              \
	"groupArrayIf(seq, freed = 0))) AS lk, countIf(w > 1) AS smp, min(seq) AS fs, "                 \
	"sumMap(if(moves, [toUInt64(jfrom), toUInt64(jto)], emptyArrayUInt64()), if(moves, [b, "        \
	"-b], emptyArrayInt64())) AS sm, max(ts) + max(fts) AS uses FROM (" CH_LEAK_CHANGES             \
	") GROUP BY file_id, rank, pid, device, dix, k, grp, exited, hasb, step_ns, per, skind, sown, " \
	"svia"

/* ... judged: judge_row's numbers from the changes at boundaries 1..k, and its rule. */
#define CH_LEAK_JUDGED                                                                                              \
	"SELECT *, tupleElement(sm, 1) AS kj, tupleElement(sm, 2) AS kv, if(k >= 3, "                               \
	"arrayCount((x, v) -> x >= 1 AND x <= k AND v > 0, kj, kv), 0) AS grew, if(k >= 3, "                        \
	"arrayCount((x, v) -> x >= 1 AND x <= k AND v < 0, kj, kv), 0) AS fell, if(k >= 3, "                        \
	"arraySum((x, v) -> if(x >= 1 AND x <= k AND v > 0, v, 0), kj, kv), 0) AS up, "                             \
	"if(k >= 3, arraySum((x, v) -> if(x >= 1 AND x <= k, v, 0), kj, kv), 0) AS net, "                           \
	"arraySum((x, v) -> if(x <= k, toFloat64(v) * toFloat64(k + 1 - x) * x / 2, 0.), kj, kv) "                  \
	"AS sxy, toFloat64(k * (k + 1) * (k + 2)) / 12 AS sxx, (k >= 3 AND net > 0 AND fell <= "                    \
	"(1 - 0.8) * k + 1e-9 AND grew >= 3 AND 3 * grew >= k AND 2 * net >= up AND (exited = 1 "                   \
	"OR 2 * lb >= net)) AS grows, if(grows AND sxy > 0, toUInt64(floor(sxy / sxx / grp + "                      \
	"0.5)), 0) AS growth, multiIf(per = 'loop', 'passes', per = 'step', 'steps', 'windows') "                   \
	"AS plural, multiIf(hasb = 0, 'its file was shipped by an earlier bpfsight (no "                            \
	"mem_leak_steps rows): ship it again', k < 3, concat('too few ', plural, ' to tell (', toString(k), ')'), " \
	"fell > (1 - 0.8) * k + 1e-9, concat('fell at ', toString(fell), ' of ', toString(k), "                     \
	"' ', plural), grew < 3 OR 3 * grew < k, concat('grew at ', toString(grew), ' of ', "                       \
	"toString(k), ' ', plural), net <= 0 OR 2 * net < up, concat('kept little of it: ', "                       \
	"if(net >= 0, '+', ''), toString(net), ' B from the first to the last'), concat('freed "                    \
	"most of it by the end: ', toString(toInt64(floor(lb + 0.5))), ' B live')) AS why FROM (" CH_LEAK_SITES     \
	")"

/*
 * The rows stats shows (growing, or live at the end), each site's first allocation across
 * the file's devices beside it (mem_site numbers a site once for all of them).
 */
#define CH_LEAK_ROWS                                                                                                    \
	"SELECT file_id, rank, pid, device, dix, k, step_ns, per, skind, sown, svia, fs, l_lb AS lb, "                  \
	"l_lk AS lk, l_smp AS smp, l_grows AS grows, l_growth AS growth, l_grew AS grew, l_why "                        \
	"AS why, sfirst, uses FROM (SELECT file_id, skind, sown, svia, min(fs) AS sfirst, "                             \
	"max(uses) AS uses, "                                                                                           \
	"groupArray(rank) AS a_rank, groupArray(pid) AS a_pid, groupArray(device) AS a_dev, groupArray(dix) AS a_dix, " \
	"groupArray(k) AS a_k, groupArray(step_ns) AS a_sn, groupArray(per) AS a_per, "                                 \
	"groupArray(fs) AS a_fs, groupArray(lb) AS a_lb, groupArray(lk) AS a_lk, groupArray(smp) "                      \
	"AS a_smp, groupArray(grows) AS a_grows, groupArray(growth) AS a_growth, "                                      \
	"groupArray(grew) AS a_grew, groupArray(why) AS a_why FROM (" CH_LEAK_JUDGED                                    \
	") GROUP BY file_id, skind, sown, svia) ARRAY JOIN "                                                            \
	"a_rank AS rank, a_pid AS pid, a_dev AS device, a_dix AS dix, a_k AS k, a_sn AS step_ns, a_per AS per, "        \
	"a_fs AS fs, a_lb AS l_lb, a_lk AS l_lk, a_smp AS l_smp, a_grows AS l_grows, a_growth AS "                      \
	"l_growth, a_grew AS l_grew, a_why AS l_why WHERE l_grows OR floor(l_lb + 0.5) > 0"

/* A site's frame (its `frame` row), as mem_site__set names it: by the frame's id. */
#define CH_LEAK_FRAME(p)                                                                             \
	"SELECT file_id, visitParamExtractUInt(args, 'frame_id') AS " p "id, name AS " p "func, "    \
	"if(position(args, '\"path\":null') > 0, NULL, visitParamExtractString(args, 'path')) AS " p \
	"file, if(visitParamExtractUInt(args, 'frame_kind') = 2, visitParamExtractUInt(args, "       \
	"'line'), 0) AS " p "line FROM " CH_DB ".events WHERE {J} AND kind = 'frame'"

/* ... with their sites' frames (the job's line, the library's beside it). */
#define CH_LEAK_NAMED                                                                                         \
	"SELECT * FROM (SELECT *, svia AS vid FROM (SELECT * FROM (SELECT *, sown AS oid FROM (" CH_LEAK_ROWS \
	")) AS lhs ANY LEFT JOIN (" CH_LEAK_FRAME(                                                            \
		"o") ") AS jl4 USING file_id, oid)) AS lhs ANY LEFT "                                         \
		     "JOIN (" CH_LEAK_FRAME("v") ") AS jl5 USING file_id, vid"

const struct ch_report ch_mem_leaks = {
	.name = "mem_leaks",
	.cols = ch_mem_leaks_cols,
	.needs = "mem_alloc", /* no allocation, no row: not asked (its analysis: 0.15 s) */
	.sql = "SELECT " CH_NS_ID(
		"pid") " AS xpid, process, device, multiIf(skind = 0, "
		       "'(no stack)', skind = 1, '(before stacks)', ofunc), if(skind = 2, ofile, NULL), "
		       "if(skind = 2, oline, NULL), if(svia > 0, vfunc, NULL), if(svia > 0, vfile, NULL), "
		       "if(svia > 0, vline, NULL), toUInt64(floor(lb + 0.5)), toUInt64(floor(lk + 0.5)), "
		       "if(grows, growth, NULL), if(k > 0, grew, NULL), if(k > 0, k, NULL), if(k > 0, "
		       "per, NULL), if(k > 0, step_ns, NULL), if(grows, NULL, why), if(smp > 0, smp, "
		       "NULL) FROM (" CH_LEAK_NAMED
		       ") AS lhs ANY LEFT JOIN (SELECT file_id, pid, any(" CH_NAMES_NS
		       ") AS ns, any(if(position(args, '\"process\":') > 0, visitParamExtractString(args, "
		       "'process'), NULL)) AS process FROM " CH_DB ".events WHERE {J} AND kind = "
		       "'thread_names' GROUP BY file_id, pid) AS jl6 USING file_id, pid ORDER BY grows DESC, "
		       "if(grows, growth, 0) DESC, lb DESC, dix, if(skind < 2, toUInt64(skind), 2 + sfirst), "
		       "uses FORMAT TabSeparated",
};
