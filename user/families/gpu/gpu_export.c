// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family in the exports (export_model.h; docs/EXPORT.md, "GPU and NVTX").
 *
 * A kernel, copy or memset is a slice on its stream (EX_GPU_STREAM): in bpfsight's own view on
 * a track per (process, device) "GPU N" with a child per stream "Stream S" (a stream's slices
 * overlap only when a CUDA graph ran nodes at once: they then go on another lane of it), in the
 * profiler's on pid = device, tid = stream, as Kineto (torch.profiler) writes them so that
 * Holistic Trace Analysis reads them: cat "kernel", "gpu_memcpy", "gpu_memset", with dump's args
 * plus Kineto's "correlation", "registers per thread", "shared memory", "memory bandwidth
 * (GB/s)", copies and memsets under Kineto's names ("Memcpy HtoD (Pageable -> Device)",
 * "Memset (Device)": HTA tells memory work from compute by them), not nsys's that dump, SQLite
 * and stats keep.
 *
 * A flow goes from each launching call (a cuda call of a launch, graph, copy or memset API;
 * CUPTI's own API record of it when no cuda event was matched to it) to its GPU work (the
 * flows hook, for every record). In the profiler's view one event stands for each call, as
 * Kineto writes one runtime event per call: the cuda event when one was matched to CUPTI's API
 * record (which is then left out), else the API record, and it carries the same "correlation"
 * as its GPU work, and the "External id" of the op that launched it (ex_op_at).
 *
 * Kineto's correlation is CUPTI's id, which both sides know. Here the launching call is drawn
 * before its GPU work is read (the exports stream), and CUPTI's id is not in the call's record:
 * both sides carry instead the id made from what they share, the launching thread and the
 * call's entry time (gpu_flow_id: 53 bits, exact in JSON). An operation whose launching call is
 * not known keeps CUPTI's id as its correlation (Kineto's, never 0), so every GPU event has one.
 * CUPTI's own id is the GPU event's "cupti_correlation".
 *
 * A device's busy counter (bpfsight's own view) is the fraction of each GPU_BIN_NS bin in which
 * an operation ran, assuming a device's operations do not overlap: concurrent streams count
 * their overlap twice, so it is clamped at 1 (stats -r gpu_idle_sum has the exact union). Bins
 * (time_bins.h) fill in any order, so they are written at the end. Memory: at most 8 bytes per
 * bin per device, i.e. trace duration / 10 ms (2.9 MB per device-hour; time_bins.h keeps only
 * the pages where operations begin or end).
 *
 * Tables, nsys's: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and _MEMSET with nsys's columns in nsys's
 * order (then a few of ours), and the enum tables their numbers refer to (ENUM_CUDA_MEMCPY_OPER,
 * ENUM_CUDA_MEM_KIND, nsys's values: its memory kinds are CUPTI's minus one, unknown last).
 * What CUPTI does not tell the shim is NULL, even where nsys declares NOT NULL (local memory,
 * grid id, cache config). Ours at the end of each GPU table: globalTid (the launching thread),
 * apiStart (its call's entry, the cuda event or CUPTI record the GPU work is linked to) and
 * graphId; on copies, async. The launching call's CUPTI_ACTIVITY_KIND_RUNTIME row (the cuda
 * family's) gets CUPTI's correlationId, as in nsys, so RUNTIME joins KERNEL on it: the call's
 * row is written before its GPU work is read, so the links (thread, call entry, correlation id)
 * go to a scratch table and fill the calls' rows at the end (ex_fill). A CUPTI API record no
 * cuda event was matched to (-t gpu without cuda) becomes a RUNTIME row of its own,
 * cuptiOnly = 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "export_model.h"
#include "gpu.h"
#include "gpu_decode.h"
#include "hmap.h"
#include "time_bins.h"

#define GPU_BIN_NS 10000000ull /* 10 ms */

static const struct ex_column enum_cols[] = {
	{ "id", EX_COL_INTEGER, EX_COL_NOT_NULL | EX_COL_KEY },
	EXC_TEXT("name"),
	EXC_TEXT("label"),
	{ 0 },
};
static const struct ex_table memcpy_oper = { "ENUM_CUDA_MEMCPY_OPER", enum_cols };
static const struct ex_table mem_kind = { "ENUM_CUDA_MEM_KIND", enum_cols };

/* The columns every GPU table starts with. */
#define GPU_FIRST_COLS                                                                             \
	EXC_INT_NN("start"), EXC_INT_NN("end"), EXC_INT_NN("deviceId"), EXC_INT_NN("contextId"),   \
		EXC_INT("greenContextId"), EXC_INT_NN("streamId"), EXC_INT("correlationId"),       \
		EXC_INT("globalPid")
/* ... and ours they end with, but a copy's async. */
#define GPU_LAST_COLS EXC_INT("globalTid"), EXC_INT("apiStart"), EXC_INT("graphId")

static const struct ex_column kernel_cols[] = {
	GPU_FIRST_COLS,
	EXC_REF_NN("demangledName", EX_STRING_IDS),
	EXC_REF_NN("shortName", EX_STRING_IDS),
	EXC_INT("mangledName"),
	EXC_INT("launchType"),
	EXC_INT("cacheConfig"),
	EXC_INT_NN("registersPerThread"),
	EXC_INT_NN("gridX"),
	EXC_INT_NN("gridY"),
	EXC_INT_NN("gridZ"),
	EXC_INT_NN("blockX"),
	EXC_INT_NN("blockY"),
	EXC_INT_NN("blockZ"),
	EXC_INT_NN("staticSharedMemory"),
	EXC_INT_NN("dynamicSharedMemory"),
	EXC_INT("localMemoryPerThread"),
	EXC_INT("localMemoryTotal"),
	EXC_INT("gridId"),
	EXC_INT("sharedMemoryExecuted"),
	EXC_INT("graphNodeId"),
	EXC_INT("sharedMemoryLimitConfig"),
	GPU_LAST_COLS,
	{ 0 },
};
static const struct ex_index kernel_idx[] = {
	{ "start", "start" },
	{ "stream", "globalPid, deviceId, streamId" },
	{ "correlationId", "globalPid, correlationId" },
	{ 0 },
};
static const struct ex_table kernels = {
	"CUPTI_ACTIVITY_KIND_KERNEL",
	kernel_cols,
	.indexes = kernel_idx,
};

static const struct ex_column memcpy_cols[] = {
	GPU_FIRST_COLS,
	EXC_INT_NN("bytes"),
	EXC_REF_NN("copyKind", "ENUM_CUDA_MEMCPY_OPER(id)"),
	EXC_INT("deprecatedSrcId"),
	EXC_REF("srcKind", "ENUM_CUDA_MEM_KIND(id)"),
	EXC_REF("dstKind", "ENUM_CUDA_MEM_KIND(id)"),
	EXC_INT("srcDeviceId"),
	EXC_INT("srcContextId"),
	EXC_INT("dstDeviceId"),
	EXC_INT("dstContextId"),
	EXC_INT("migrationCause"),
	EXC_INT("graphNodeId"),
	EXC_INT("virtualAddress"),
	GPU_LAST_COLS,
	EXC_INT_NN("async"),
	{ 0 },
};
static const struct ex_index stream_idx[] = {
	{ "start", "start" },
	{ "stream", "globalPid, deviceId, streamId" },
	{ 0 },
};
static const struct ex_table copies = {
	"CUPTI_ACTIVITY_KIND_MEMCPY",
	memcpy_cols,
	.indexes = stream_idx,
};

static const struct ex_column memset_cols[] = {
	GPU_FIRST_COLS,
	EXC_INT_NN("value"),
	EXC_INT_NN("bytes"),
	EXC_INT("graphNodeId"),
	EXC_REF("memKind", "ENUM_CUDA_MEM_KIND(id)"),
	GPU_LAST_COLS,
	{ 0 },
};
static const struct ex_table memsets = {
	"CUPTI_ACTIVITY_KIND_MEMSET",
	memset_cols,
	.indexes = stream_idx,
};

/* The launching calls' correlation ids, to fill their RUNTIME rows at the end. */
static const struct ex_column link_cols[] = {
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("start"),
	EXC_INT_NN("correlationId"),
	{ 0 },
};
static const struct ex_table links = {
	"gpu_link",
	link_cols,
	"globalTid, start",
	EX_TABLE_BY_KEY | EX_TABLE_SCRATCH,
};

static const struct ex_table *const gpu_tables[] = {
	&memcpy_oper, &mem_kind, &kernels, &copies, &memsets, &links, NULL,
};

/* The rows of the enum tables: nsys's values. */
static const char *const memcpy_opers[][2] = {
	{ "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown" },
	{ "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device" },
	{ "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host" },
	{ "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array" },
	{ "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host" },
	{ "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array" },
	{ "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device" },
	{ "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array" },
	{ "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device" },
	{ "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host" },
	{ "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer" },
};
static const char *const mem_kinds[][2] = {
	{ "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable" },
	{ "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned" },
	{ "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device" },
	{ "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array" },
	{ "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed" },
	{ "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static" },
	{ "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static" },
	{ "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown" },
};

static const struct ex_fill link_fill = {
	.table = &cuda_runtime_table,
	.from = &links,
	.on = "globalTid, start",
	.set = "correlationId",
	.skip = "cuptiOnly",
	.index = "correlationId",
};

/* bpfsight's own view: a device's busy time per bin. */
struct gpu_busy {
	struct time_bins bins;
};

static int gpu_enum_rows(struct ex_sink *s, const struct ex_table *t, const char *const (*rows)[2],
			 size_t n)
{
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = ex_row(s, t, EX_ROW_ADD,
			     (struct ex_value[]){ EX_V_INT(i), EX_V_TEXT(rows[i][0]),
						  EX_V_TEXT(rows[i][1]) },
			     NULL);
	return err;
}

static int gpu_open(struct ex_sink *s, void **st)
{
	if (ex_wants(s, EX_OWN) && !(*st = hmap__new(sizeof(struct gpu_busy)))) /* {pid, dev} */
		return -ENOMEM;
	if (!ex_wants(s, EX_TABLES))
		return 0;
	return gpu_enum_rows(s, &memcpy_oper, memcpy_opers,
			     sizeof(memcpy_opers) / sizeof(memcpy_opers[0]))
		       ?: gpu_enum_rows(s, &mem_kind, mem_kinds,
					sizeof(mem_kinds) / sizeof(mem_kinds[0]));
}

static void gpu_free(void *st)
{
	struct gpu_busy *d;
	size_t it = 0;

	while ((d = hmap__next(st, &it, NULL)))
		time_bins__free(&d->bins);
	hmap__free(st);
}

static const char *gpu_cat(__u16 type)
{
	switch (type) {
	case BS_REC_GPU_KERNEL:
		return "kernel";
	case BS_REC_GPU_MEMCPY:
		return "gpu_memcpy";
	default:
		return "gpu_memset";
	}
}

/* CUpti_ActivityMemoryKind 0..7 as Kineto names them (its memoryKindString). */
static const char *kineto_mem_kind(__u32 kind)
{
	static const char *const names[] = {
		"Unknown", "Pageable", "Pinned",	"Device",
		"Array",   "Managed",  "Device Static", "Managed Static",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "Unrecognized";
}

/*
 * Kineto's name of a copy or memset ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)")
 * into BUF; NULL for a kernel or a record too short.
 */
static const char *kineto_name(const struct bs_hdr *rec, char *buf, size_t len)
{
	const struct bs_gpu_memcpy *c = (const void *)rec;
	const struct bs_gpu_memset *s = (const void *)rec;
	const char *kind;

	if (rec->type == BS_REC_GPU_MEMCPY && rec->size >= sizeof(*c)) {
		kind = gpu_copy_kind_name(c->copy_kind);
		snprintf(buf, len, "Memcpy %s (%s -> %s)",
			 strcmp(kind, "unknown") ? kind : "<unknown>", kineto_mem_kind(c->src_kind),
			 kineto_mem_kind(c->dst_kind));
		return buf;
	}
	if (rec->type == BS_REC_GPU_MEMSET && rec->size >= sizeof(*s)) {
		snprintf(buf, len, "Memset (%s)", kineto_mem_kind(s->mem_kind));
		return buf;
	}
	return NULL;
}

/*
 * E (a copy of the event: its string args still point into the original, alive meanwhile)
 * with its "correlation", CUPTI's, called "cupti_correlation": Kineto's key is the flow's.
 */
static void cupti_correlation(struct event *e)
{
	for (__u32 i = 0; i < e->nargs && i < EVENT_MAX_ARGS; i++)
		if (!strcmp(e->args[i].key, "correlation"))
			e->args[i].key = "cupti_correlation";
}

/*
 * nsys's shortName: the function's own name, without return type, scope, template arguments or
 * parameters ("void ns::gemm<float, 4>(float*)" -> "gemm"). Into BUF.
 */
static const char *short_name(const char *name, char *buf, size_t len)
{
	const char *end = name, *start;
	int depth = 0;
	size_t n;

	for (; *end && !(*end == '(' && !depth); end++)
		depth += *end == '<' ? 1 : *end == '>' ? -1 : 0;
	/* Drop trailing template arguments, then stop at the scope or the return type. */
	depth = 0;
	while (end > name && end[-1] == '>') {
		do {
			end--;
			depth += *end == '>' ? 1 : *end == '<' ? -1 : 0;
		} while (end > name && depth);
	}
	for (start = end; start > name; start--) {
		depth += start[-1] == '>' ? 1 : start[-1] == '<' ? -1 : 0;
		if (!depth && (start[-1] == ' ' || start[-1] == ':'))
			break;
	}
	n = end - start;
	if (!n || n >= len)
		return name;
	memcpy(buf, start, n);
	buf[n] = 0;
	return buf;
}

/* nsys's ENUM_CUDA_MEM_KIND of a CUpti_ActivityMemoryKind: one less, unknown (0) last. */
static int nsys_mem_kind(__u32 k)
{
	return k >= 1 && k <= 7 ? (int)k - 1 : 7;
}

static struct ex_value u64_if(int have, __u64 v)
{
	return have ? EX_V_UINT(v) : EX_V_NULL;
}

/* The values every GPU table starts with (V[0..7]) and ours it ends with (V[END..END+2]). */
static void gpu_common(struct ex_value *v, const struct gpu_op *op, int end, __u32 graph_id)
{
	v[0] = EX_V_UINT(op->ts);
	v[1] = EX_V_UINT(op->ts + op->dur);
	v[2] = EX_V_INT(op->device);
	v[3] = EX_V_INT(op->context);
	v[4] = EX_V_NULL;
	v[5] = EX_V_INT(op->stream);
	v[6] = EX_V_INT(op->correlation);
	v[7] = EX_V_INT(ex_gtid(op->pid, 0));
	v[end] = u64_if(op->tid, ex_gtid(op->pid, op->tid));
	v[end + 1] = u64_if(op->call_ts, op->call_ts);
	v[end + 2] = u64_if(op->flags & BS_GPU_GRAPH, graph_id);
}

/* A kernel's, copy's or memset's row, its launch's link. */
static int gpu_op_rows(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev,
		       const struct gpu_op *op)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	const struct bs_gpu_memcpy *c = (const void *)rec;
	const struct bs_gpu_memset *m = (const void *)rec;
	int graph = op->flags & BS_GPU_GRAPH, err;
	struct ex_value v[31] = { 0 };
	char buf[256];

	if (op->type == BS_REC_GPU_KERNEL) {
		gpu_common(v, op, 28, k->graph_id);
		v[8] = EX_V_STRING(ev->name);
		v[9] = EX_V_STRING(short_name(ev->name, buf, sizeof(buf)));
		v[13] = EX_V_INT(k->registers);
		for (int d = 0; d < 3; d++) {
			v[14 + d] = EX_V_INT(k->grid[d]);
			v[17 + d] = EX_V_INT(k->block[d]);
		}
		v[20] = EX_V_INT(k->shmem_static);
		v[21] = EX_V_INT(k->shmem_dynamic);
		v[26] = u64_if(graph, k->graph_node_id);
		err = ex_row(s, &kernels, EX_ROW_ADD, v, NULL);
	} else if (op->type == BS_REC_GPU_MEMCPY) {
		gpu_common(v, op, 20, c->graph_id);
		v[8] = EX_V_UINT(c->bytes);
		/* CUPTI's kinds stop at 10; others are Unknown, as stats names them. */
		v[9] = EX_V_INT(c->copy_kind <= 10 ? c->copy_kind : 0);
		v[11] = EX_V_INT(nsys_mem_kind(c->src_kind));
		v[12] = EX_V_INT(nsys_mem_kind(c->dst_kind));
		v[13] = EX_V_INT(c->src_device);
		v[15] = EX_V_INT(c->dst_device);
		v[18] = u64_if(graph, c->graph_node_id);
		v[23] = EX_V_INT(c->async);
		err = ex_row(s, &copies, EX_ROW_ADD, v, NULL);
	} else {
		gpu_common(v, op, 12, m->graph_id);
		v[8] = EX_V_INT(m->value);
		v[9] = EX_V_UINT(m->bytes);
		v[10] = u64_if(graph, m->graph_node_id);
		v[11] = EX_V_INT(nsys_mem_kind(m->mem_kind));
		err = ex_row(s, &memsets, EX_ROW_ADD, v, NULL);
	}
	/* A kernel of a graph launch shares its call, and its correlation id, with the others. */
	if (!err && op->flags & BS_GPU_CALL_CUDA && op->call_ts)
		err = ex_row(s, &links, EX_ROW_KEEP,
			     (struct ex_value[]){ EX_V_INT(ex_gtid(op->pid, op->tid)),
						  EX_V_UINT(op->call_ts),
						  EX_V_INT(op->correlation) },
			     NULL);
	return err;
}

/* CUPTI's record of a launching call: a link to its cuda event's row, or a row of its own. */
static int gpu_api_rows(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_gpu_api *a = (const void *)rec;

	if (a->flags & BS_GPU_CALL_CUDA)
		return a->call_ts
			       ? ex_row(s, &links, EX_ROW_KEEP,
					(struct ex_value[]){ EX_V_INT(ex_gtid(rec->pid, rec->tid)),
							     EX_V_UINT(a->call_ts),
							     EX_V_INT(a->correlation) },
					NULL)
			       : 0;
	return ex_row(s, &cuda_runtime_table, EX_ROW_ADD,
		      (struct ex_value[]){
			      EX_V_UINT(rec->ts), EX_V_UINT(rec->ts + a->dur),
			      EX_V_INT(a->domain == 1 ? CUDA_DRIVER_CLASS : CUDA_RUNTIME_CLASS),
			      EX_V_INT(ex_gtid(rec->pid, rec->tid)), EX_V_INT(a->correlation),
			      EX_V_STRING(ev->name), EX_V_INT((__s32)a->ret), EX_V_NULL,
			      EX_V_INT(0),
			      EX_V_NULL /* the next id, shared with the cuda family's rows */,
			      EX_V_INT(1) },
		      NULL);
}

static struct ex_value key_u64(const char *key, __u64 v)
{
	return (struct ex_value){ key, EX_UINT, .u = v };
}

/* A kernel, copy or memset on its stream; its device's busy time. */
static int gpu_op_event(struct ex_sink *s, struct hmap *busy, const struct bs_hdr *rec,
			const struct event *ev, const struct gpu_op *op)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	int linked = op->call_ts && op->flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API);
	__u64 flow = linked ? gpu_flow_id(op->pid, op->tid, op->call_ts) : 0;
	struct ex_value extra[2];
	struct ex_profiler prof = { .cat = gpu_cat(op->type), .extra = extra };
	struct event e;
	struct gpu_busy *d;
	char buf[64], desc[160];
	int err;

	if (busy) {
		d = hmap__get(busy, (struct hkey){ op->pid, op->device }, 1);
		if (!d)
			return -ENOMEM;
		if (!d->bins.width)
			time_bins__init(&d->bins, ex_bins_origin(s, op->ts), GPU_BIN_NS);
		err = time_bins__add(&d->bins, op->ts, op->dur);
		if (err)
			return err;
	}
	if (ex_wants(s, EX_PROFILER)) {
		prof.name = kineto_name(rec, buf, sizeof(buf));
		e = *ev;
		cupti_correlation(&e);
		prof.args = &e;
		/* Unlinked: CUPTI's id, as Kineto's, where no launching event can claim it. */
		prof.correlation = flow ? flow : op->correlation;
		prof.correlated = 1;
		prof.op_id = flow ? ex_op_at(s, op->pid, op->tid, op->call_ts) : 0;
		if (op->type == BS_REC_GPU_KERNEL) {
			extra[prof.nextra++] = key_u64("registers per thread", k->registers);
			extra[prof.nextra++] =
				key_u64("shared memory", (__u64)k->shmem_dynamic + k->shmem_static);
		} else if (op->dur) { /* bytes per ns are GB/s */
			extra[prof.nextra++] =
				(struct ex_value){ "memory bandwidth (GB/s)", EX_FIXED, 6,
						   .d = (double)op->bytes / op->dur };
		}
	}
	if (ex_wants(s, EX_OWN)) /* the track's description, bpfsight's own view's */
		snprintf(
			desc, sizeof(desc),
			"Kernels, copies and memsets CUPTI timed on CUDA device %u of this process "
			"(gpu family), one track per stream.",
			op->device);
	return ex_event(s, &(struct ex_event){
				   .rec = rec,
				   .ev = ev,
				   .on = { .kind = EX_GPU_STREAM,
					   .pid = op->pid,
					   .device = op->device,
					   .stream = op->stream,
					   .desc = desc },
				   .shape = EX_SLICE,
				   .prof = &prof,
			   });
}

/*
 * CUPTI's record of a launching call: in the profiler's view the call's one event when no cuda
 * event was matched to it, then the start of its flow; left out when one was (the cuda event
 * stands for the call, with the same correlation). Drawn by its style in bpfsight's own view.
 */
static int gpu_api_event(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_gpu_api *a = (const void *)rec;
	struct ex_profiler prof = { .cat = a->domain == 1 ? "cuda_driver" : "cuda_runtime" };
	struct event e;

	if (a->flags & BS_GPU_CALL_CUDA)
		return ex_event(s, &(struct ex_event){ .rec = rec, .ev = ev, .views = EX_OWN });
	if (ex_wants(s, EX_PROFILER)) {
		e = *ev;
		cupti_correlation(&e);
		prof.args = &e;
		prof.correlation = gpu_flow_id(rec->pid, rec->tid, rec->ts);
		prof.correlated = 1;
		prof.op_id = ex_op_at(s, ev->pid, ev->tid, ev->ts);
	}
	return ex_event(
		s, &(struct ex_event){ .rec = rec, .ev = ev, .shape = EX_SLICE, .prof = &prof });
}

static int gpu_record(struct ex_sink *s, void *st, const struct bs_hdr *rec, const struct event *ev)
{
	struct gpu_op op;
	int err = 0;

	if (!ev)
		return 0;
	if (rec->type == BS_REC_GPU_API) {
		if (rec->size < sizeof(struct bs_gpu_api))
			return 0;
		err = ex_wants(s, EX_TABLES) ? gpu_api_rows(s, rec, ev) : 0;
		if (!err)
			err = gpu_api_event(s, rec, ev);
	} else if (gpu_op__read(rec, &op)) {
		err = ex_wants(s, EX_TABLES) ? gpu_op_rows(s, rec, ev, &op) : 0;
		if (!err && ex_wants(s, EX_TIMELINE))
			err = gpu_op_event(s, st, rec, ev, &op);
	} else {
		return 0; /* shim status: an instant by its style */
	}
	return err ? err : 1;
}

/* A launching call starts a flow to its GPU work, which ends it. */
static void gpu_flows(const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	const struct bs_gpu_api *a = (const void *)rec;
	const char *name;
	struct gpu_op op;

	/* Every record of every family asks: its type first. */
	switch (rec->type) {
	case BS_REC_CUDA_CALL:
		if (gpu_is_launching_call(rec, &name))
			*out = gpu_flow_id(rec->pid, rec->tid, rec->ts);
		break;
	case BS_REC_GPU_API:
		/* CUPTI's record starts the flow when no cuda event carries it. */
		if (rec->size >= sizeof(*a) && !(a->flags & BS_GPU_CALL_CUDA))
			*out = gpu_flow_id(rec->pid, rec->tid, rec->ts);
		break;
	case BS_REC_GPU_KERNEL:
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
		if (gpu_op__read(rec, &op) && op.call_ts &&
		    op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API))
			*in = gpu_flow_id(op.pid, op.tid, op.call_ts);
		break;
	default:
		break;
	}
}

/* The busy counters (bpfsight's own view), the launches' correlation ids (tables). */
static int gpu_finish(struct ex_sink *s, void *st)
{
	struct time_bins_iter it;
	struct gpu_busy *d;
	struct hkey key;
	size_t at = 0;
	__u64 ts;
	double v;
	int err = ex_fill(s, &link_fill);

	while (!err && st && (d = hmap__next(st, &at, &key))) {
		struct ex_counter c = {
			.on = { .kind = EX_GPU, .pid = (__u32)key.a, .device = (__u32)key.b },
			.name = "GPU busy",
			.desc = "Fraction of each 10 ms in which a kernel, copy or memset ran on this "
				"device (overlapping streams count once per operation, capped at 1; "
				"bpfsight stats -r gpu_idle_sum has the exact idle time).",
			.views = EX_OWN,
		};

		if (!time_bins__used(&d->bins))
			continue;
		err = ex_counter_from(s, &c, d->bins.origin);
		time_bins__iter_init(&it, &d->bins);
		while (!err && time_bins__step(&d->bins, &it, 1, &ts, &v))
			err = ex_count1(s, &c, ts, "value", EX_V_REAL(v));
	}
	return err;
}

const struct family_export gpu_export = {
	.tables = gpu_tables,
	.open = gpu_open,
	.free = gpu_free,
	.record = gpu_record,
	.finish = gpu_finish,
	.flows = gpu_flows,
};
