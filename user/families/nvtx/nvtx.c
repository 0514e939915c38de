// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nvtx family, record side: the cupti-shim channel (shim_link.c) asked for NVTX ranges.
 * The shim records NVTX calls only while its nvtx semaphore is up; --capture-range=nvtx
 * also raises sync, so that a range's start reaches us as it happens (nvtx_unpack.c).
 */
#include "nvtx.h"
#include "kernel_features.h"
#include "record_ctx.h"
#include "shim_link.h"
#include "family_record.h"
#include "family_stats.h"

static int nvtx_prelaunch(const struct record_opts *o)
{
	return shim_link__prelaunch(o, &family_nvtx);
}

/* Names given to threads and categories: they name events long after. */
static const __u16 nvtx_state_records[] = { BS_REC_NVTX_NAME, 0 };

/* --capture-range=nvtx:NAME: inside the NVTX ranges whose text is NAME[@DOMAIN]. */
static const struct family_capture nvtx_capture = { .kind = "nvtx", .arg = ":NAME" };
/* A range's start: what opens the gate, and the range's record comes only at its end. */
static const __u16 nvtx_ungated[] = { BS_REC_NVTX_BEGIN, 0 };

static const struct loss_cause nvtx_losses[] = {
	{ BS_LOSS_NVTX_NAMES, "nvtx_names_capped",
	  "names given to thread or category keys of a process past the 65536 the recorder keeps: "
	  "not written" },
	{ 0 },
};

/* --trigger hang: a process whose ranges stopped ending made no progress. */
static const __u16 nvtx_progress[] = { BS_REC_NVTX_RANGE, 0 };

static const struct family_record nvtx_recording = {
	.nsys_trace = "nvtx", /* nsys -t */
	.shim = &nvtx_shim,
	.ring_only = shim_ring_only,
	.capture = &nvtx_capture,
	.ungated = nvtx_ungated,
	/* shim.bpf.c tells the USDT sites apart by their cookies */
	.needs = 1u << KF_ATTACH_COOKIE,
	.attach = shim_link__attach,
	.poll = shim_link__poll,
	.detach = shim_link__detach,
	.consume = shim_link__consume,
	.consumes = shim_link_consumes,
	.stop = shim_link__stop,
	.prelaunch = nvtx_prelaunch,
};

static const struct family_decode nvtx_reading = {
	.progress = nvtx_progress,
	.state_records = nvtx_state_records,
	.decoders = nvtx_decoders,
	.name_observe = nvtx_name_observe,
};

static const struct family_stats nvtx_stats = {
	.reports = nvtx_reports,
	.page = &nvtx_page,
	.steps = nvtx_step_sources,
};

const struct family family_nvtx = {
	.name = "nvtx",
	.desc = "NVTX ranges, marks and names (cupti-shim as the NVTX injection)",
	.flags = FAMILY_SHIM,
	.losses = nvtx_losses,
	.export = &nvtx_export,
	.record = &nvtx_recording,
	.decode = &nvtx_reading,
	.stats = &nvtx_stats,
};
