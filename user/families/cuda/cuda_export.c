// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family in the exports (export_model.h): its calls are slices on their threads, by
 * their style, in the profiler's view under Kineto's category of the API they belong to:
 * "cuda_driver" for the driver's (cu*), "cuda_runtime" for the runtime's (cuda*, __cuda*). A
 * launching call's flow to its GPU work is the gpu family's (its flows hook).
 *
 * Tables:
 *   CUPTI_ACTIVITY_KIND_RUNTIME  nsys's, one row per CUDA call, with nsys's columns in nsys's
 *                                order, then three of ours: nestingLevel (bs_ucall.depth: 0 = a
 *                                call the application made), id, which BPFSIGHT_CUDA_ARGS.callId
 *                                refers to, and cuptiOnly (1: a row from CUPTI's own record of a
 *                                call no cuda-family event was matched to, the gpu family's).
 *                                correlationId is CUPTI's, set on the launching calls of GPU
 *                                work by the gpu family;
 *   BPFSIGHT_CUDA_ARGS           a CUDA call's decoded arguments (nsys has no table for them).
 * callchainId: the call's stack (--stacks=cuda), a BPFSIGHT_STACKS id.
 */
#include <string.h>
#include "cuda.h"
#include "export_model.h"

static const struct ex_column runtime_cols[] = {
	EXC_INT_NN("start"),	    EXC_INT_NN("end"),
	EXC_INT_NN("eventClass"),   EXC_INT("globalTid"),
	EXC_INT("correlationId"),   EXC_REF_NN("nameId", EX_STRING_IDS),
	EXC_INT_NN("returnValue"),  EXC_INT("callchainId"),
	EXC_INT_NN("nestingLevel"), { "id", EX_COL_INTEGER, EX_COL_NOT_NULL | EX_COL_KEY },
	EXC_INT_NN("cuptiOnly"),    { 0 },
};
static const struct ex_index runtime_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
const struct ex_table cuda_runtime_table = {
	"CUPTI_ACTIVITY_KIND_RUNTIME",
	runtime_cols,
	.indexes = runtime_idx,
};

static const struct ex_column args_cols[] = {
	{ "callId", EX_COL_INTEGER, EX_COL_NOT_NULL | EX_COL_KEY,
	  "CUPTI_ACTIVITY_KIND_RUNTIME(id)" },
	EXC_REF("kernelNameId", EX_STRING_IDS),
	EXC_INT("gridX"),
	EXC_INT("gridY"),
	EXC_INT("gridZ"),
	EXC_INT("blockX"),
	EXC_INT("blockY"),
	EXC_INT("blockZ"),
	EXC_INT("sharedBytes"),
	EXC_INT("bytes"),
	EXC_TEXT("copyKind"),
	EXC_INT("stream"),
	EXC_INT("dst"),
	EXC_INT("src"),
	EXC_INT("ptr"),
	{ 0 },
};
static const struct ex_table cuda_args_table = { "BPFSIGHT_CUDA_ARGS", args_cols };

static const struct ex_table *const cuda_tables[] = { &cuda_runtime_table, &cuda_args_table, NULL };

/* The driver API is cu*, the runtime cuda* and __cuda*. */
static int cuda_is_driver(const char *name)
{
	return name && !strncmp(name, "cu", 2) && strncmp(name, "cuda", 4);
}

static int cuda_open(struct ex_sink *s, void **st)
{
	return ex_event_class(s, CUDA_RUNTIME_CLASS, "TRACE_PROCESS_EVENT_CUDA_RUNTIME",
			      "CUDA runtime")
		       ?: ex_event_class(s, CUDA_DRIVER_CLASS, "TRACE_PROCESS_EVENT_CUDA_DRIVER",
					 "CUDA driver");
}

/*
 * The arguments people filter and group by: the launched function (by name, through
 * StringIds), launch shape, sizes, copy direction, stream and pointers. Only calls that have
 * one of them get a row.
 */
static int cuda_args(struct ex_sink *s, const struct event *ev, __s64 call)
{
	static const char *const cols[] = { "grid_x",  "grid_y",  "grid_z",	  "block_x",
					    "block_y", "block_z", "shared_bytes", "bytes",
					    "kind",    "stream",  "dst",	  "src",
					    "ptr" };
	const size_t ncols = sizeof(cols) / sizeof(cols[0]);
	const struct event_arg *fn = event__arg(ev, "kernel");
	struct ex_value v[2 + sizeof(cols) / sizeof(cols[0])];
	int any;

	if (!fn)
		fn = event__arg(ev, "func");
	any = fn && fn->kind == EVENT_ARG_STR;
	v[0] = EX_V_INT(call);
	v[1] = any ? EX_V_STRING(fn->str) : EX_V_NULL;
	for (size_t i = 0; i < ncols; i++) {
		v[2 + i] = ex_v_arg(ev, cols[i]);
		any |= v[2 + i].kind != EX_NULL;
	}
	return any ? ex_row(s, &cuda_args_table, EX_ROW_ADD, v, NULL) : 0;
}

/* One CUDA API call: nsys's row, then its arguments. */
static int cuda_rows(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	struct ex_value v[] = {
		EX_V_INT(ev->ts),
		EX_V_INT(ev->ts + ev->dur),
		EX_V_INT(cuda_is_driver(ev->name) ? CUDA_DRIVER_CLASS : CUDA_RUNTIME_CLASS),
		EX_V_INT(ex_gtid(rec->pid, rec->tid)),
		EX_V_NULL,
		EX_V_STRING(ev->name),
		EX_V_INT(ex_arg_int(ev, "ret", 0)),
		EX_V_STACK(ev->stack), /* --stacks=cuda */
		EX_V_INT(ex_arg_int(ev, "depth", 0)),
		EX_V_NULL, /* the next id of the table's (the gpu family's rows included) */
		EX_V_INT(0),
	};
	__s64 id;
	int err;

	err = ex_row(s, &cuda_runtime_table, EX_ROW_ADD, v, &id);
	return err ? err : cuda_args(s, ev, id);
}

static int cuda_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	struct ex_profiler prof = { .cat = NULL };
	int err;

	if (!ev)
		return 0;
	err = ex_wants(s, EX_TABLES) && ev->name ? cuda_rows(s, rec, ev) : 0;
	if (!err && ex_wants(s, EX_TIMELINE)) {
		prof.cat = cuda_is_driver(ev->name) ? "cuda_driver" : "cuda_runtime";
		err = ex_event(s, &(struct ex_event){ .rec = rec, .ev = ev, .prof = &prof });
	}
	return err ? err : 1;
}

const struct family_export cuda_export = {
	.tables = cuda_tables,
	.open = cuda_open,
	.record = cuda_record,
};
