// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cublas family in the exports (export_model.h): its calls are slices on their threads, by
 * their style. Table: CUBLAS_EVENTS, nsys's table of cuBLAS calls (start, end, eventClass,
 * globalTid, nameId, its first columns; eventClass 29, nsys's TRACE_PROCESS_EVENT_CUBLAS), then
 * ours: returnValue (the cublasStatus_t), nestingLevel (bs_ucall.depth) and a GEMM's decoded
 * arguments, as dump shows them (NULL for other calls). callchainId: the call's stack
 * (--stacks=cublas), a BPFSIGHT_STACKS id.
 */
#include "cublas.h"
#include "export_model.h"

#define CUBLAS_CLASS 29

static const struct ex_column events_cols[] = {
	EX_UCALL_COLS,		 EXC_INT("handle"), EXC_INT("stream"),	    EX_GEMM_COLS,
	EXC_INT("batch"),	 EXC_TEXT("aType"), EXC_TEXT("bType"),	    EXC_TEXT("cType"),
	EXC_TEXT("computeType"), EXC_INT("flops"),  EXC_INT("callchainId"), { 0 },
};
static const struct ex_index events_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table cublas_events = {
	"CUBLAS_EVENTS",
	events_cols,
	.indexes = events_idx,
};

static const struct ex_table *const cublas_tables[] = { &cublas_events, NULL };

static int cublas_open(struct ex_sink *s, void **st)
{
	return ex_event_class(s, CUBLAS_CLASS, "TRACE_PROCESS_EVENT_CUBLAS", "cuBLAS");
}

static int cublas_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
			 const struct event *ev)
{
	static const char *const cols[] = {
		"handle", "stream",	  "trans", "m",	    "n",      "k",
		"lda",	  "ldb",	  "ldc",   "batch", "a_type", "b_type",
		"c_type", "compute_type", "flops"
	};

	return ex_ucall_row(s, &cublas_events, rec, ev, CUBLAS_CLASS, cols,
			    (int)(sizeof(cols) / sizeof(cols[0])));
}

const struct family_export cublas_export = {
	.tables = cublas_tables,
	.open = cublas_open,
	.record = cublas_record,
};
