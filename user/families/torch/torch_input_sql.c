// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What torch's input-bound rule keeps of every record, as SQL in the server (stats --from's
 * verdict, docs/CLICKHOUSE.md); torch_input_from.c makes its rows the rule's again.
 */
#include "ch_reports.h"
#include "ch_sql.h"
#include "torch.h"

/*
 * torch's input-bound rule (torch_input_verdict.c): the off-CPU time (rows with a stack) and
 * CPU samples per thread and stack, with what the rule reads of the stack (its row's args:
 * `loader`, in the DataLoader's __next__; `own`, its line in the job's own code; a worker's
 * `wfunc` and `wsite`); the rule sorts them into a trainer's waits and its workers' time by
 * the workers the names say. A stack's user row (kernel 0) where it has one: `own` is on it.
 */
static const struct ch_col ch_torch_input_cols[] = {
	{ "pid", "PID", 'u' },		 { "tid", "TID", 'u' },
	{ "sample", "CPU Sample", 'u' }, { "loader", "In DataLoader", 'u' },
	{ "own", "Own Line", 't' },	 { "wfunc", "Worker Function", 't' },
	{ "wsite", "Worker Site", 't' }, { "ns", "Off-CPU (ns)", 'u' },
	{ "count", "Count", 'u' },	 {},
};

static const struct ch_report ch_torch_input_waits = {
	.name = "torch_input_waits",
	.cols = ch_torch_input_cols,
	.sql = "SELECT " CH_NS_ID("pid") ", " CH_NS_ID(
		"tid") ", sample, loader, own, wfunc, wsite, offns, cnt FROM (SELECT * FROM (SELECT "
		       "file_id, file, pid, tid, toUInt8(kind = 'cpu_sample') AS sample, "
		       "visitParamExtractUInt(args, 'stack_id') AS stack_id, sum(dur) AS offns, "
		       "count() AS cnt FROM " CH_DB ".events WHERE {W} AND ((kind = 'offcpu' AND "
		       "position(args, '\"stack_id\":') > 0) OR kind = 'cpu_sample') GROUP BY file_id, "
		       "file, pid, tid, sample, stack_id) AS lhs ALL INNER JOIN (SELECT file_id, stack_id, "
		       "visitParamExtractUInt(sargs, 'loader') AS loader, " CH_STR_OR_NULL("sargs", "own") " AS own, " CH_STR_OR_NULL(
			       "sargs",
			       "wfunc") " AS wfunc, " CH_STR_OR_NULL("sargs",
								     "wsite") " AS wsite "
									      "FROM (SELECT file_id, "
									      "visitParamExtractUInt(args, "
									      "'stack_id') AS stack_id, "
									      "argMin(args, "
									      "visitParamExtractInt(args, "
									      "'kernel')) AS sargs FROM " CH_DB
									      ".events WHERE {J} AND kind = "
									      "'stack' GROUP BY file_id, "
									      "stack_id) WHERE "
									      "position(sargs, '\"loader\":') > 0 OR "
									      "position(sargs, '\"wsite\":') > 0) AS jf1 "
									      "USING file_id, stack_id) AS lhs ANY LEFT JOIN (" CH_THREAD_NS
									      ") AS jf2 USING file_id, file, pid, tid "
									      "FORMAT TabSeparated",
	.needs = "offcpu,cpu_sample", /* the waits and samples by stack */
};

static const struct ch_report *const torch_sql_inputs[] = {
	&ch_torch_input_waits,
	NULL,
};

/* torch's SQL (struct family.sql). */
const struct family_sql torch_sql = {
	.inputs = torch_sql_inputs,
};
