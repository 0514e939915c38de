// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cudnn family in the exports (export_model.h): its calls are slices on their threads, by
 * their style. Table: CUDNN_EVENTS, nsys's table of cuDNN calls (start, end, eventClass,
 * globalTid, nameId; eventClass 28, nsys's TRACE_PROCESS_EVENT_CUDNN), then ours: returnValue
 * (the cudnnStatus_t), nestingLevel (bs_ucall.depth: 1 for the sub-library's half of a call),
 * handle, and what a cudnnBackendExecute ran (ops, and its matmul's batch, m, n, k, flops),
 * NULL where the call does not say it. callchainId: the call's stack (--stacks=cudnn), a
 * BPFSIGHT_STACKS id.
 */
#include "cudnn.h"
#include "export_model.h"

#define CUDNN_CLASS 28

static const struct ex_column events_cols[] = {
	EX_UCALL_COLS, EXC_INT("handle"), EXC_TEXT("ops"),  EXC_INT("batch"),	    EXC_INT("m"),
	EXC_INT("n"),  EXC_INT("k"),	  EXC_INT("flops"), EXC_INT("callchainId"), { 0 },
};
static const struct ex_index events_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table cudnn_events = {
	"CUDNN_EVENTS",
	events_cols,
	.indexes = events_idx,
};

static const struct ex_table *const cudnn_tables[] = { &cudnn_events, NULL };

static int cudnn_open(struct ex_sink *s, void **st)
{
	return ex_event_class(s, CUDNN_CLASS, "TRACE_PROCESS_EVENT_CUDNN", "cuDNN");
}

static int cudnn_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
			const struct event *ev)
{
	static const char *const cols[] = { "handle", "ops", "batch", "m", "n", "k", "flops" };

	return ex_ucall_row(s, &cudnn_events, rec, ev, CUDNN_CLASS, cols,
			    (int)(sizeof(cols) / sizeof(cols[0])));
}

const struct family_export cudnn_export = {
	.tables = cudnn_tables,
	.open = cudnn_open,
	.record = cudnn_record,
};
