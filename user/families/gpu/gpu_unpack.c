// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu family, what it tells the cupti-shim channel (struct family_shim, shim_family.h): the
 * records CUPTI's activity becomes in the shim's batches, and the launch join they go through
 * as they are unpacked (shim_join.h): each kernel, copy and memset linked to the cuda call
 * that launched it, then written, judged by a --capture-range as the call is.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda.h"
#include "gpu.h"
#include "msg.h"
#include "mono_clock.h"
#include "order_link.h"
#include "record_ctx.h"
#include "shim_family.h"
#include "shim_join.h"
#include "shim_unpack.h"

struct gpu_unpack {
	struct shim_unpack *u;
	struct shim_join *join;
};

/* GPU work belongs to the range of the call that launched it (when it is known). */
static __u64 gate_ts(const struct bs_hdr *rec)
{
	__u64 call = 0;

	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
		call = ((const struct bs_gpu_kernel *)rec)->call_ts;
		break;
	case BS_REC_GPU_MEMCPY:
		call = ((const struct bs_gpu_memcpy *)rec)->call_ts;
		break;
	case BS_REC_GPU_MEMSET:
		call = ((const struct bs_gpu_memset *)rec)->call_ts;
		break;
	case BS_REC_GPU_API:
		call = ((const struct bs_gpu_api *)rec)->call_ts;
		break;
	}
	return call ? call : rec->ts;
}

/* The join decided REC: written now. */
static void emit(void *arg, struct bs_hdr *rec)
{
	struct gpu_unpack *g = arg;

	shim_unpack__emit(g->u, rec, gate_ts(rec));
}

/* Whether the recording has the cuda family, whose calls GPU records are linked to. */
static int cuda_recorded(const struct record_opts *o)
{
	for_each_family(it)
		if (it.f == &family_cuda)
			return !!(o->families & (1ull << it.i));
	return 0;
}

static void *gpu_unpack_new(struct shim_unpack *u)
{
	struct gpu_unpack *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->u = u;
	g->join = shim_join__new(emit, g);
	if (!g->join) {
		free(g);
		return NULL;
	}
	/* Without the cuda family no call will come: API records need not wait for one. */
	if (!cuda_recorded(shim_unpack__ctx(u)->opts))
		shim_join__no_calls(g->join);
	return g;
}

static void gpu_unpack_free(void *st)
{
	struct gpu_unpack *g = st;

	if (!g)
		return;
	shim_join__free(g->join);
	free(g);
}

/* Every GPU record goes through the join, which writes it once it is decided; a graph node
 * is written as it comes. */
static int gpu_unpack_record(void *st, struct bs_hdr *rec, const char *const texts[])
{
	struct gpu_unpack *g = st;

	if (rec->type == BS_REC_GPU_GRAPH_NODE)
		shim_unpack__emit(g->u, rec, rec->ts); /* no call to wait for: it has its thread */
	else if (rec->type == BS_REC_GPU_API)
		shim_join__api(g->join, (struct bs_gpu_api *)rec, mono_now_ns());
	else
		shim_join__gpu(g->join, rec, mono_now_ns());
	return 1;
}

/* From the first call on, not the first batch: a process launches work well before its
 * shim's first batch arrives (up to a flush period later). */
static void gpu_unpack_ring(void *st, const struct bs_hdr *rec)
{
	struct gpu_unpack *g = st;

	/* While the thread lives: its CUPTI records may name it by its namespace's id. */
	shim_unpack__tid_seen(g->u, rec->pid, rec->tid);
	shim_join__cuda_call(g->join, rec);
}

static void gpu_unpack_tick(void *st, __u64 now)
{
	shim_join__expire(((struct gpu_unpack *)st)->join, now, 0);
}

static void gpu_unpack_proc_exit(void *st, __u32 pid)
{
	shim_join__proc_exit(((struct gpu_unpack *)st)->join, pid);
}

/* No batch comes any more: what waits is written, unlinked, and the links are summed up. */
static void gpu_unpack_finish(void *st)
{
	struct gpu_unpack *g = st;
	struct shim_join_stats js = {};
	char why[512];

	shim_join__expire(g->join, 0, 1);
	shim_join__stats(g->join, &js);
	if (js.linked_cuda || js.linked_api || js.unlinked)
		pr_info("GPU records: %llu linked to their cuda call (%llu by "
			"launch order), %llu to CUPTI's API record only, %llu unlinked\n",
			(unsigned long long)js.linked_cuda, (unsigned long long)js.linked_order,
			(unsigned long long)js.linked_api, (unsigned long long)js.unlinked);
	if (shim_join_stats__why(&js, why, sizeof(why)))
		pr_info("GPU records not linked to a cuda call, by reason: %s\n", why);
	if (js.order_dropped)
		pr_warn("launch order had no room for %llu cuda calls "
			"and GPU records (over %u calls or %u waiting records)\n",
			(unsigned long long)js.order_dropped, ORDER_MAX_CALLS, ORDER_MAX_OPS);
	if (js.calls_dropped)
		pr_warn("the launch join forgot %llu cuda calls early "
			"(over %u kept)\n",
			(unsigned long long)js.calls_dropped, JOIN_MAX_CALLS);
}

static const struct shim_site gpu_sites[] = { { "gpu", .needs_libcuda = 1 }, { 0 } };

static const struct shim_rec gpu_recs[] = {
	/* kernels' names as CUPTI gives them: mangled */
	{ BS_REC_GPU_KERNEL, sizeof(struct bs_gpu_kernel),
	  .strings = { offsetof(struct bs_gpu_kernel, name_id) }, .demangle = 0x1 },
	{ BS_REC_GPU_MEMCPY, sizeof(struct bs_gpu_memcpy) },
	{ BS_REC_GPU_MEMSET, sizeof(struct bs_gpu_memset) },
	{ BS_REC_GPU_API, sizeof(struct bs_gpu_api),
	  .strings = { offsetof(struct bs_gpu_api, name_id) } },
	{ BS_REC_GPU_GRAPH_NODE, sizeof(struct bs_gpu_graph_node) },
	{ 0 },
};

static const struct shim_name gpu_states[] = {
	{ BS_SHIM_ST_GPU_ON, "gpu_on" },
	{ BS_SHIM_ST_CUPTI_BUSY, "cupti_busy" },
	{ 0 },
};

static const struct shim_count gpu_counts[] = {
	{ "kernels", "Kernels" },
	{ "memcpys", "Copies" },
	{ "memsets", "Memsets" },
	{ "gpu_api", "API Records" },
	{ 0 },
};

static int gpu_count_of(const struct bs_hdr *rec)
{
	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
		return 0;
	case BS_REC_GPU_MEMCPY:
		return 1;
	case BS_REC_GPU_MEMSET:
		return 2;
	case BS_REC_GPU_API:
		return 3;
	}
	return -1;
}

static const __u16 gpu_ring_types[] = { BS_REC_CUDA_CALL, 0 };

const struct family_shim gpu_shim = {
	.sites = gpu_sites,
	.recs = gpu_recs,
	.states = gpu_states,
	.counts = gpu_counts,
	.count_of = gpu_count_of,
	.hint = { "CUDA_INJECTION64_PATH", "GPU activity (-t gpu)", "" },
	.env = "CUDA_INJECTION64_PATH",
	/* the channel's own losses are the gpu family's, as the shim's dropped records are */
	.channel = 1,
	.ring_types = gpu_ring_types,
	.new = gpu_unpack_new,
	.free = gpu_unpack_free,
	.record = gpu_unpack_record,
	.ring = gpu_unpack_ring,
	.tick = gpu_unpack_tick,
	.proc_exit = gpu_unpack_proc_exit,
	.finish = gpu_unpack_finish,
};
