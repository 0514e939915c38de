// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu family, record side: the cupti-shim channel (shim_link.c) asked for GPU activity. The
 * kernel bumps the shim's gpu semaphore where the channel attaches, and the shim turns
 * CUPTI's CONCURRENT_KERNEL, MEMCPY and MEMSET on in those processes only. What it tells the
 * channel (its site, records, the launch join) is gpu_unpack.c.
 */
#include "gpu.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "shim_link.h"
#include "family_record.h"
#include "family_stats.h"

static int gpu_prelaunch(const struct record_opts *o)
{
	return shim_link__prelaunch(o, &family_gpu);
}

/* The shim's loss: it counts GPU and NVTX records alike (the channel is the gpu family's). */
static const struct loss_cause gpu_losses[] = {
	{ BS_LOSS_SHIM, "shim_dropped", "records the cupti-shim or CUPTI dropped: buffers full" },
	{ 0 },
};

/* What the shim did: says why GPU records may be missing, inside a range or not; a graph's
 * nodes, made before a range that replays them, say where its ops were captured. */
static const __u16 gpu_ungated[] = { BS_REC_SHIM_STATUS, BS_REC_GPU_GRAPH_NODE, 0 };

static const struct family_record gpu_recording = {
	.nsys_trace = "cuda,cuda-hw", /* nsys -t */
	.shim = &gpu_shim,
	.ring_only = shim_ring_only,
	/* shim.bpf.c tells the USDT sites apart by their cookies */
	.needs = 1u << KF_ATTACH_COOKIE,
	.ungated = gpu_ungated,
	.attach = shim_link__attach,
	.poll = shim_link__poll,
	.detach = shim_link__detach,
	.consume = shim_link__consume,
	.consumes = shim_link_consumes,
	.stop = shim_link__stop,
	.prelaunch = gpu_prelaunch,
};

static const struct family_decode gpu_reading = {
	.reorder = &gpu_reorder,
	.walk_new = gpu_graph_walk__new,
	.walk_observe = gpu_graph_walk__observe,
	.walk_free = gpu_graph_walk__free,
	.decoders = gpu_decoders,
};

static const struct family_stats gpu_stats = {
	.reports = gpu_reports,
	.verdict = &gpu_verdict,
	.page = &gpu_page,
};

const struct family family_gpu = {
	.name = "gpu",
	.desc = "GPU kernels, copies and memsets timed by CUPTI (cupti-shim)",
	.flags = FAMILY_SHIM,
	.losses = gpu_losses,
	.export = &gpu_export,
	.sql = &gpu_sql,
	.metrics = &gpu_metrics,
	.top = &gpu_top,
	.record = &gpu_recording,
	.decode = &gpu_reading,
	.stats = &gpu_stats,
};
