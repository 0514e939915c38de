// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of the gpu family: the cupti-shim's STATUS records and CUPTI's kernels, copies,
 * memsets and API records, as docs/GPU.md describes them for dump (names as nsys shows them).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "cuda.h"
#include "gpu.h"
#include "gpu_decode.h"
#include "shim_family.h"

/* CUpti_ActivityMemcpyKind 1..10, with nsys's label for its operation name. */
static const struct {
	const char *name, *op;
} copy_kinds[] = {
	[1] = { "HtoD", "[CUDA memcpy Host-to-Device]" },
	[2] = { "DtoH", "[CUDA memcpy Device-to-Host]" },
	[3] = { "HtoA", "[CUDA memcpy Host-to-Array]" },
	[4] = { "AtoH", "[CUDA memcpy Array-to-Host]" },
	[5] = { "AtoA", "[CUDA memcpy Array-to-Array]" },
	[6] = { "AtoD", "[CUDA memcpy Array-to-Device]" },
	[7] = { "DtoA", "[CUDA memcpy Device-to-Array]" },
	[8] = { "DtoD", "[CUDA memcpy Device-to-Device]" },
	[9] = { "HtoH", "[CUDA memcpy Host-to-Host]" },
	[10] = { "PtoP", "[CUDA memcpy Peer-to-Peer]" },
};

#define NCOPY_KINDS (sizeof(copy_kinds) / sizeof(copy_kinds[0]))

/* CUpti_ActivityMemoryKind 0..7. */
static const char *const mem_kinds[] = {
	"unknown", "pageable", "pinned",	"device",
	"array",   "managed",  "device_static", "managed_static",
};

const char *const *shim_state_names(void)
{
	static const char *names[32];
	static int filled;

	if (!filled++) /* the registry does not change: named once */
		shim_family__state_names(names);
	return names;
}

const char *gpu_copy_kind_name(__u32 kind)
{
	return kind < NCOPY_KINDS && copy_kinds[kind].name ? copy_kinds[kind].name : "unknown";
}

const char *gpu_copy_op_name(__u32 kind)
{
	return kind < NCOPY_KINDS && copy_kinds[kind].op ? copy_kinds[kind].op
							 : "[CUDA memcpy Unknown]";
}

const char *gpu_mem_kind_name(__u32 kind)
{
	return kind < sizeof(mem_kinds) / sizeof(mem_kinds[0]) ? mem_kinds[kind] : "unknown";
}

const char *gpu_link_name(__u16 flags)
{
	if (flags & BS_GPU_CALL_CUDA)
		return "cuda";
	return flags & BS_GPU_CALL_API ? "api" : "none";
}

__u64 gpu_flow_id(__u32 pid, __u32 tid, __u64 call_ts)
{
	/* splitmix64's finalizer over the three: spread, so ids of one thread never collide
	 * by construction (different call_ts), and ids of different threads only by chance. */
	__u64 h = ((__u64)pid << 32 | tid) ^ (call_ts * 0x9e3779b97f4a7c15ull);

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	h &= (1ull << 53) - 1;
	return h ? h : 1;
}

int gpu_is_launching_call(const struct bs_hdr *rec, const char **name)
{
	const struct bs_ucall *u = (const void *)rec;
	const struct ucall_api *api;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*u))
		return 0;
	api = ucall_table__api(&cuda_table, u->fn);
	if (!api)
		return 0;
	*name = api->name;
	return api->group == CUDA_GRP_LAUNCH || api->group == CUDA_GRP_GRAPH ||
	       api->group == CUDA_GRP_MEMCPY || api->group == CUDA_GRP_MEMSET;
}

int gpu_op__read(const struct bs_hdr *rec, struct gpu_op *op)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	const struct bs_gpu_memcpy *c = (const void *)rec;
	const struct bs_gpu_memset *s = (const void *)rec;

	memset(op, 0, sizeof(*op));
	op->type = rec->type;
	op->pid = rec->pid;
	op->tid = rec->tid;
	op->ts = rec->ts;
	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
		if (rec->size < sizeof(*k))
			return 0;
		op->dur = k->dur;
		op->call_ts = k->call_ts;
		op->flags = k->flags;
		op->device = k->device;
		op->context = k->context;
		op->stream = k->stream;
		op->correlation = k->correlation;
		op->name_id = k->name_id;
		return 1;
	case BS_REC_GPU_MEMCPY:
		if (rec->size < sizeof(*c))
			return 0;
		op->dur = c->dur;
		op->call_ts = c->call_ts;
		op->flags = c->flags;
		op->device = c->device;
		op->context = c->context;
		op->stream = c->stream;
		op->correlation = c->correlation;
		op->bytes = c->bytes;
		op->copy_kind = c->copy_kind;
		return 1;
	case BS_REC_GPU_MEMSET:
		if (rec->size < sizeof(*s))
			return 0;
		op->dur = s->dur;
		op->call_ts = s->call_ts;
		op->flags = s->flags;
		op->device = s->device;
		op->context = s->context;
		op->stream = s->stream;
		op->correlation = s->correlation;
		op->bytes = s->bytes;
		return 1;
	default:
		return 0;
	}
}

const char *gpu_op__name(const struct gpu_op *op, const struct trace_model *m)
{
	const char *name;

	switch (op->type) {
	case BS_REC_GPU_KERNEL:
		name = op->name_id ? trace_model__string(m, op->name_id) : NULL;
		return name ? name : GPU_UNKNOWN_KERNEL;
	case BS_REC_GPU_MEMCPY:
		return gpu_copy_op_name(op->copy_kind);
	default:
		return GPU_MEMSET_NAME;
	}
}

/*
 * What every GPU operation ends with: graph ids (graph nodes only) and, when the file has the
 * node's making, the capture: the thread and time the node was made (inside the call that
 * captured it), then the call, the link.
 */
static void decode_tail(struct event *ev, const struct bs_hdr *rec, const struct trace_model *m,
			__u16 flags, __u32 graph_id, __u64 graph_node_id, __u64 call_ts)
{
	__u32 tid;
	__u64 ts;

	if (flags & BS_GPU_GRAPH) {
		event__arg_u64(ev, "graph_id", graph_id);
		event__arg_u64(ev, "graph_node_id", graph_node_id);
		if (gpu_graph_walk__capture(m, rec->pid, graph_node_id, &tid, &ts)) {
			event__arg_u64(ev, "capture_tid", tid);
			event__arg_u64(ev, "capture_ts", ts);
		}
	}
	if (call_ts)
		event__arg_u64(ev, "call_ts", call_ts);
	event__arg_str(ev, "link", gpu_link_name(flags));
}

static void decode_where(struct event *ev, const struct gpu_op *op)
{
	event__arg_u64(ev, "device", op->device);
	event__arg_u64(ev, "context", op->context);
	event__arg_u64(ev, "stream", op->stream);
	event__arg_u64(ev, "correlation", op->correlation);
}

static int decode_kernel(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	struct gpu_op op;

	gpu_op__read(rec, &op);
	ev->name = gpu_op__name(&op, m);
	ev->dur = k->dur;
	decode_where(ev, &op);
	event__arg_dim3(ev, "grid", k->grid);
	event__arg_dim3(ev, "block", k->block);
	event__arg_u64(ev, "shmem_dynamic", k->shmem_dynamic);
	event__arg_u64(ev, "shmem_static", k->shmem_static);
	event__arg_u64(ev, "registers", k->registers);
	decode_tail(ev, rec, m, k->flags, k->graph_id, k->graph_node_id, k->call_ts);
	return 1;
}

static int decode_memcpy(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpu_memcpy *c = (const void *)rec;
	struct gpu_op op;

	gpu_op__read(rec, &op);
	ev->name = gpu_op__name(&op, m);
	ev->dur = c->dur;
	event__arg_u64(ev, "bytes", c->bytes);
	event__arg_str(ev, "copy_kind", gpu_copy_kind_name(c->copy_kind));
	event__arg_str(ev, "src_kind", gpu_mem_kind_name(c->src_kind));
	event__arg_str(ev, "dst_kind", gpu_mem_kind_name(c->dst_kind));
	event__arg_bool(ev, "async", c->async);
	decode_where(ev, &op);
	event__arg_u64(ev, "src_device", c->src_device);
	event__arg_u64(ev, "dst_device", c->dst_device);
	decode_tail(ev, rec, m, c->flags, c->graph_id, c->graph_node_id, c->call_ts);
	return 1;
}

static int decode_memset(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpu_memset *s = (const void *)rec;
	struct gpu_op op;

	gpu_op__read(rec, &op);
	ev->name = GPU_MEMSET_NAME;
	ev->dur = s->dur;
	event__arg_u64(ev, "bytes", s->bytes);
	event__arg_u64(ev, "value", s->value);
	event__arg_str(ev, "mem_kind", gpu_mem_kind_name(s->mem_kind));
	decode_where(ev, &op);
	decode_tail(ev, rec, m, s->flags, s->graph_id, s->graph_node_id, s->call_ts);
	return 1;
}

static int decode_api(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gpu_api *a = (const void *)rec;
	const char *name = a->name_id ? trace_model__string(m, a->name_id) : NULL;

	if (!name) {
		snprintf(ev->namebuf, sizeof(ev->namebuf), "cbid_%u", a->cbid);
		name = ev->namebuf;
	}
	ev->name = name;
	ev->dur = a->dur;
	event__arg_u64(ev, "correlation", a->correlation);
	event__arg_u64(ev, "cbid", a->cbid);
	/* CUpti_CallbackDomain: 1 driver, 2 runtime. */
	event__arg_str(ev, "domain",
		       a->domain == 1	? "driver"
		       : a->domain == 2 ? "runtime"
					: "unknown");
	event__arg_s64(ev, "ret", (__s32)a->ret);
	if (a->flags & BS_GPU_CALL_CUDA)
		event__arg_u64(ev, "call_ts", a->call_ts);
	return 1;
}

/* CUgraphNodeType's names (cuda.h), as cudaGraphNodeType's without the prefix. */
static const char *node_type_name(__u32 t)
{
	static const char *const names[] = { "kernel",
					     "memcpy",
					     "memset",
					     "host",
					     "graph",
					     "empty",
					     "wait_event",
					     "event_record",
					     "ext_semaphore_signal",
					     "ext_semaphore_wait",
					     "mem_alloc",
					     "mem_free",
					     "batch_mem_op",
					     "conditional" };

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "other";
}

static int decode_graph_node(const struct bs_hdr *rec, const struct trace_model *m,
			     struct event *ev)
{
	const struct bs_gpu_graph_node *g = (const void *)rec;

	ev->name = g->orig_node_id ? "copied" : "made";
	event__arg_u64(ev, "graph_id", g->graph_id);
	event__arg_u64(ev, "graph_node_id", g->node_id);
	event__arg_str(ev, "node_type", node_type_name(g->node_type));
	if (g->orig_node_id) {
		event__arg_u64(ev, "orig_graph_id", g->orig_graph_id);
		event__arg_u64(ev, "orig_node_id", g->orig_node_id);
	}
	return 1;
}

static int decode_status(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_shim_status *s = (const void *)rec;
	const char *detail = s->detail_id ? trace_model__string(m, s->detail_id) : NULL;
	const char *name = shim_family__event_name(s->event);

	if (!name) {
		/* A newer shim's event: keep its number visible. */
		snprintf(ev->namebuf, sizeof(ev->namebuf), "event_%u", s->event);
		name = ev->namebuf;
	}
	ev->name = name;
	event__arg_flags(ev, "state", s->state, shim_state_names(), 32);
	event__arg_s64(ev, "cupti_result", s->cupti_result);
	event__arg_str(ev, "detail", detail ? detail : "");
	event__arg_u64(ev, "dropped", s->dropped);
	event__arg_u64(ev, "seq", s->seq);
	event__arg_u64(ev, "cupti_version", s->cupti_version);
	return 1;
}

/* GPU work and CUPTI's calls are drawn by the gpu export hooks (export_*_gpu.c). */
static const struct export_style status_style = { .cat = "shim", .ph = 'i' };
static const struct export_style graph_node_style = {
	.cat = "cuda_graph",
	.ph = 'i',
	.desc = "A CUDA graph node made (captured from a stream, or added) or copied (the "
		"executable graph's, at cudaGraphInstantiate): where its replays were captured.",
};
static const struct export_style api_style = {
	.track = "CUDA API (CUPTI)",
	.desc = "CUPTI's record of a CUDA call that put work on the GPU, where no cuda-family event "
		"was matched to it (-t gpu without cuda): the start of its launch -> GPU flow.",
};

const struct rec_decoder gpu_decoders[] = {
	{ BS_REC_SHIM_STATUS, sizeof(struct bs_shim_status), "shim_status", decode_status,
	  &status_style, .string_offs = { offsetof(struct bs_shim_status, detail_id) } },
	{ BS_REC_GPU_KERNEL, sizeof(struct bs_gpu_kernel), "gpu_kernel", decode_kernel,
	  .clock_offs = { offsetof(struct bs_gpu_kernel, call_ts) },
	  .string_offs = { offsetof(struct bs_gpu_kernel, name_id) }, .span = 1 },
	{ BS_REC_GPU_MEMCPY, sizeof(struct bs_gpu_memcpy), "gpu_memcpy", decode_memcpy,
	  .clock_offs = { offsetof(struct bs_gpu_memcpy, call_ts) }, .span = 1 },
	{ BS_REC_GPU_MEMSET, sizeof(struct bs_gpu_memset), "gpu_memset", decode_memset,
	  .clock_offs = { offsetof(struct bs_gpu_memset, call_ts) }, .span = 1 },
	{ BS_REC_GPU_API, sizeof(struct bs_gpu_api), "gpu_api", decode_api, &api_style,
	  .clock_offs = { offsetof(struct bs_gpu_api, call_ts) },
	  .string_offs = { offsetof(struct bs_gpu_api, name_id) }, .span = 1 },
	{ BS_REC_GPU_GRAPH_NODE, sizeof(struct bs_gpu_graph_node), "gpu_graph_node",
	  decode_graph_node, &graph_node_style },
	{ 0 },
};
