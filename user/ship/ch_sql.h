/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the SQL of the reports (ch_reports.c, ch_gil_reports.c) and the verdict's inputs
 * (ch_verdict.c) share: the same rows, the same ids, written once. */
#ifndef BPFSIGHT_CH_SQL_H
#define BPFSIGHT_CH_SQL_H

#include "ch_schema.h"

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

/* Each thread's rank namespace (a merged file's, 0 else), as `ns`, by file, pid and tid. */
#define CH_THREAD_NS                                                                               \
	"SELECT file_id, file, pid, tid, visitParamExtractUInt(args, 'ns') AS ns FROM " CH_DB      \
	".events WHERE {J} AND kind = 'thread_names'"

/* String KEY of a row's ARGS (a column of dump's JSON), NULL when it has none. */
#define CH_STR_OR_NULL(args, key)                                                                  \
	"if(position(" args ", '\"" key "\":') > 0, visitParamExtractString(" args ", '" key       \
	"'), NULL)"

#endif /* BPFSIGHT_CH_SQL_H */
