// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The pyfunc family in the exports (export_model.h): its calls are slices on their threads, by
 * their style. nsys writes its Python function ranges as NVTX ranges; a table of their own
 * keeps what they are (docs/EXPORT.md):
 *   BPFSIGHT_PYFUNC_EVENTS  one row per call piece: start, end, globalTid, nameId (the
 *                           function "module:Qual.name" -> StringIds), fileId (its file ->
 *                           StringIds), line (its first line), domainId (the spec's domain ->
 *                           StringIds, NULL: none), depth (named calls open around it on its
 *                           thread), endKind (return, unwind, yield, open), resumed (1: it
 *                           began at a generator's or coroutine's resume), beganBefore (1:
 *                           already running when tracing began, which start is)
 * NVTX ranges and torch ops of the same thread join it by time on globalTid.
 */
#include "export_model.h"
#include "pyfunc_read.h"

static const struct ex_column events_cols[] = {
	EXC_INT_NN("start"),   EXC_INT_NN("end"),	  EXC_INT_NN("globalTid"),
	EXC_INT_NN("nameId"),  EXC_INT_NN("fileId"),	  EXC_INT_NN("line"),
	EXC_INT("domainId"),   EXC_INT_NN("depth"),	  EXC_TEXT_NN("endKind"),
	EXC_INT_NN("resumed"), EXC_INT_NN("beganBefore"), { 0 },
};
static const struct ex_index events_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table pyfunc_events = {
	"BPFSIGHT_PYFUNC_EVENTS",
	events_cols,
	.indexes = events_idx,
};

static const struct ex_table *const pyfunc_tables[] = { &pyfunc_events, NULL };

static int pyfunc_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
			 const struct event *ev)
{
	const struct bs_pyfunc_call *r = (const void *)rec;
	const struct event_arg *file, *domain;

	if (!ev || !pyfunc_call__valid(rec) || !ex_wants(s, EX_TABLES))
		return 0;
	file = event__arg(ev, "file");
	domain = event__arg(ev, "domain");
	return ex_row(s, &pyfunc_events, EX_ROW_ADD,
		      (struct ex_value[]){ EX_V_INT(rec->ts), EX_V_INT(rec->ts + r->dur),
					   EX_V_INT(ex_gtid(rec->pid, rec->tid)),
					   EX_V_STRING(ev->name),
					   EX_V_STRING(file ? file->str : ""), EX_V_INT(r->line),
					   domain ? EX_V_STRING(domain->str) : EX_V_NULL,
					   EX_V_INT(r->depth), EX_V_TEXT(pyfunc_end_name(r->end)),
					   EX_V_INT(!!(r->flags & BS_PYFUNC_RESUMED)),
					   EX_V_INT(!!(r->flags & BS_PYFUNC_BEGAN_BEFORE)) },
		      NULL);
}

const struct family_export pyfunc_export = {
	.tables = pyfunc_tables,
	.record = pyfunc_record,
};
