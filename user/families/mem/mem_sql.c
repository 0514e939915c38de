// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem's reports and rules' inputs as SQL in the server (stats --from, docs/CLICKHOUSE.md):
 * mem_peak (mem_peak_sql.c), mem_leaks (mem_leaks_sql.c), and the state mem's rules keep
 * over every record (mem_verdict.c): the OOMs per process and device, and the caching
 * allocator's peak totals per process and device, what stats --from's verdict loads in their
 * place. The OOM's peak detail reads mem_peak and the leak rule mem_leaks.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "mem.h"

/*
 * The OOM rule per process and device (its `mem_oom` rows): how many, and the largest asked
 * with the allocator's allocated and reserved bytes then (the first of that size in the
 * file's order, as the rule keeps it; a CPU's rows have no totals: 0).
 */
static const struct ch_col ch_mem_ooms_cols[] = {
	{ "pid", "PID", 'u' },
	{ "device", "Device", 't' },
	{ "count", "OOMs", 'u' },
	{ "asked", "Largest Asked (B)", 'u' },
	{ "allocated", "Allocated (B)", 'u' },
	{ "reserved", "Reserved (B)", 'u' },
	{},
};

static const struct ch_report ch_mem_ooms = {
	.name = "mem_ooms",
	.cols = ch_mem_ooms_cols,
	.sql = "SELECT " CH_NS_ID(
		"pid") " AS xpid, device, n, mb, a[i], r[i] FROM (SELECT *, "
		       "arrayFirstIndex(x -> x = mb, b) AS i FROM (SELECT * FROM (SELECT file_id, pid, "
		       "visitParamExtractString(args, 'device') AS device, count() AS n, "
		       "max(visitParamExtractUInt(args, 'bytes')) AS mb, arraySort((x, s) -> s, "
		       "groupArray(visitParamExtractUInt(args, 'bytes')), groupArray(seq)) AS b, "
		       "arraySort((x, s) -> s, groupArray(visitParamExtractUInt(args, 'allocated')), "
		       "groupArray(seq)) AS a, arraySort((x, s) -> s, groupArray(visitParamExtractUInt(args, "
		       "'reserved')), groupArray(seq)) AS r FROM " CH_DB
		       ".events WHERE {W} AND kind = "
		       "'mem_oom' GROUP BY file_id, pid, device) AS lhs ANY LEFT JOIN (" CH_PROC_NS
		       ") AS js1 USING file_id, pid)) ORDER BY xpid, device FORMAT TabSeparated",
	.needs = "mem_oom", /* the OOMs by process */
};

/*
 * The fragmentation rule per process and device, mem_sum's columns it reads: the caching
 * allocator's peak allocated and reserved bytes (the totals its `mem_alloc` rows carry, and a
 * GPU's `mem_oom` rows), the devices that have them.
 */
static const struct ch_col ch_mem_devices_cols[] = {
	{ "pid", "PID", 'u' },
	{ "device", "Device", 't' },
	{ "peak_allocated_bytes", "Peak Allocated (B)", 'u' },
	{ "peak_reserved_bytes", "Peak Reserved (B)", 'u' },
	{},
};

static const struct ch_report ch_mem_devices = {
	.name = "mem_devices",
	.cols = ch_mem_devices_cols,
	.sql = "SELECT " CH_NS_ID(
		"pid") " AS xpid, device, max(al), max(re) FROM (SELECT * FROM "
		       "(SELECT file_id, pid, visitParamExtractString(args, 'device') AS device, "
		       "visitParamExtractUInt(args, 'allocated') AS al, visitParamExtractUInt(args, "
		       "'reserved') AS re FROM " CH_DB
		       ".events WHERE {W} AND kind IN ('mem_alloc', "
		       "'mem_oom') AND position(args, '\"reserved\":') > 0) AS lhs ANY LEFT JOIN (" CH_PROC_NS
		       ") AS js2 USING file_id, pid) GROUP BY xpid, device ORDER BY xpid, device FORMAT "
		       "TabSeparated",
	.needs = "mem_alloc,mem_oom", /* the totals by device */
};

static const struct ch_report *const mem_sql_reports[] = {
	&ch_mem_peak,
	&ch_mem_leaks,
	NULL,
};

static const struct ch_report *const mem_sql_inputs[] = {
	&ch_mem_ooms,
	&ch_mem_devices,
	NULL,
};

/* mem's SQL (struct family.sql). */
const struct family_sql mem_sql = {
	.reports = mem_sql_reports,
	.inputs = mem_sql_inputs,
};
