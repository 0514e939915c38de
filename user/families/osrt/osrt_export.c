// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The osrt family in the exports (export_model.h): its system calls are slices on their
 * threads, by their style. Tables: nsys's OSRT_API, one row per system call record (at or above
 * the threshold), and BPFSIGHT_SYSCALL_AGG, the in-kernel totals per (thread, system call) of
 * every call (the last snapshot plus what exited threads of that tid closed), so that
 * osrt_sum's numbers are a query. Memory: the closed totals per key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_model.h"
#include "hmap.h"
#include "osrt.h"
#include "syscall_names.h"

#define OSRT_CLASS 27 /* nsys's TRACE_PROCESS_EVENT_OS_RUNTIME */

static const struct ex_column api_cols[] = {
	EXC_INT_NN("start"),	   EXC_INT_NN("end"),
	EXC_INT_NN("eventClass"),  EXC_INT("globalTid"),
	EXC_INT("correlationId"),  EXC_REF_NN("nameId", EX_STRING_IDS),
	EXC_INT_NN("returnValue"), EXC_INT("nestingLevel"),
	EXC_INT("callchainId"),	   { 0 },
};
static const struct ex_index api_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table osrt_api = { "OSRT_API", api_cols, .indexes = api_idx };

static const struct ex_column agg_cols[] = {
	EXC_INT_NN("pid"),
	EXC_INT_NN("tid"),
	EXC_INT_NN("nr"),
	EXC_INT_NN("globalTid"),
	EXC_REF_NN("nameId", EX_STRING_IDS),
	EXC_INT_NN("count"),
	EXC_INT_NN("totalNs"),
	EXC_INT_NN("minNs"),
	EXC_INT_NN("maxNs"),
	EXC_INT_NN("snapshotTs"),
	{ 0 },
};
static const struct ex_table osrt_agg = {
	"BPFSIGHT_SYSCALL_AGG",
	agg_cols,
	"pid, tid, nr",
	EX_TABLE_BY_KEY,
};

static const struct ex_table *const osrt_tables[] = { &osrt_api, &osrt_agg, NULL };

static int osrt_open(struct ex_sink *s, void **st)
{
	if (!ex_wants(s, EX_TABLES))
		return 0;
	*st = hmap__new(sizeof(struct bs_syscall_agg_val)); /* {pid << 32 | tid, nr}: finals */
	return *st ? ex_event_class(s, OSRT_CLASS, "TRACE_PROCESS_EVENT_OS_RUNTIME",
				    "OS runtime libraries")
		   : -ENOMEM;
}

static void osrt_free(void *st)
{
	hmap__free(st);
}

/* Same naming as the osrt decoder: "syscall_N" for numbers the table does not know. */
static struct ex_value syscall_name_of(__u32 nr, char *buf, size_t len)
{
	const char *name = syscall_name(nr);

	if (name) /* the table's: its address stays its text */
		return (struct ex_value){ .kind = EX_NAME, .s = name };
	snprintf(buf, len, "syscall_%u", nr);
	return EX_V_STRING(buf);
}

static int osrt_syscall(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_syscall *c = (const void *)rec;
	char buf[32];

	return ex_row(s, &osrt_api, EX_ROW_ADD,
		      (struct ex_value[]){
			      EX_V_INT(rec->ts), EX_V_INT(rec->ts + c->dur), EX_V_INT(OSRT_CLASS),
			      EX_V_INT(ex_gtid(rec->pid, rec->tid)), EX_V_NULL,
			      syscall_name_of(c->nr, buf, sizeof(buf)), EX_V_INT(c->ret), EX_V_NULL,
			      EX_V_STACK(ev ? ev->stack : NULL) /* --stacks=osrt */ },
		      NULL);
}

/*
 * The row of a key is its closed totals (BS_AGG_FINAL: exited threads whose tid came back,
 * evicted entries) plus its current snapshot; snapshots are cumulative, the last one counts.
 */
static int osrt_agg_row(struct ex_sink *s, struct hmap *closed_totals, const struct bs_hdr *rec)
{
	const struct bs_syscall_agg *a = (const void *)rec;
	struct bs_syscall_agg_val *closed, row;
	char buf[32];

	closed = hmap__get(closed_totals, (struct hkey){ (__u64)rec->pid << 32 | rec->tid, a->nr },
			   1);
	if (!closed)
		return -ENOMEM;
	row = *closed;
	if (a->count) {
		row.min_ns = row.count && row.min_ns < a->min_ns ? row.min_ns : a->min_ns;
		row.max_ns = row.count && row.max_ns > a->max_ns ? row.max_ns : a->max_ns;
		row.count += a->count;
		row.total_ns += a->total_ns;
	}
	if (a->flags & BS_AGG_FINAL)
		*closed = row;
	return ex_row(s, &osrt_agg, EX_ROW_REPLACE,
		      (struct ex_value[]){ EX_V_INT(rec->pid), EX_V_INT(rec->tid), EX_V_INT(a->nr),
					   EX_V_INT(ex_gtid(rec->pid, rec->tid)),
					   syscall_name_of(a->nr, buf, sizeof(buf)),
					   EX_V_UINT(row.count), EX_V_UINT(row.total_ns),
					   EX_V_UINT(row.min_ns), EX_V_UINT(row.max_ns),
					   EX_V_INT(rec->ts) },
		      NULL);
}

static int osrt_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	if (!st)
		return 0;
	switch (rec->type) {
	case BS_REC_SYSCALL:
		return osrt_syscall(s, rec, ev);
	case BS_REC_SYSCALL_AGG:
		return osrt_agg_row(s, st, rec);
	default:
		return 0;
	}
}

const struct family_export osrt_export = {
	.tables = osrt_tables,
	.open = osrt_open,
	.free = osrt_free,
	.record = osrt_record,
};
