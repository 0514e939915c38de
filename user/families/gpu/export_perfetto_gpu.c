// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's tracks in the Perfetto export (docs/EXPORT.md, "GPU and NVTX"):
 *   - per (process, device) a track "GPU N" in the process, with a child track per stream
 *     ("Stream S") holding its kernels, copies and memsets, and a "GPU busy" counter;
 *   - flows from each launching call (a cuda_api slice of a launch, graph, copy or memset
 *     API; CUPTI's gpu_api slice when no cuda event was matched) to its GPU work.
 *
 * Slices of one track must nest. A stream's operations do not overlap unless a CUDA graph ran
 * nodes concurrently: such a slice goes on another lane (pf__lanes_pick), a sibling track of
 * the same name, picked as the first lane whose slices all ended by the new slice's start,
 * which holds whatever the order records arrive in.
 *
 * The busy counter is the fraction of each PF_BIN_NS bin in which an operation ran,
 * assuming a device's operations do not overlap: concurrent streams count their overlap twice,
 * so it is clamped at 1 (stats -r gpu_idle_sum has the exact union). Bins (time_bins.h) fill in
 * any order, so they are written at the end. Memory: at most 8 bytes per bin per device, i.e.
 * trace duration / 10 ms (2.9 MB per device-hour; time_bins.h keeps only the pages where
 * operations begin or end), plus a few words per stream and lane.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto.h"
#include "gpu_decode.h"
#include "time_bins.h"
#include "gpu_records.h"
#include "hmap.h"

struct pf_dev {
	__u64 uuid;
	__u32 pid, device;
	struct time_bins busy; /* ns of operations per bin */
};

struct pf_gpu {
	struct hmap *devs;    /* {pid, device} -> pf_dev */
	struct hmap *streams; /* {pid << 32 | device, stream} -> pf_lanes */
};

static void gpu_free(void *st)
{
	struct pf_gpu *g = st;
	struct pf_dev *d;
	size_t it = 0;

	while (g->devs && (d = hmap__next(g->devs, &it, NULL)))
		time_bins__free(&d->busy);
	hmap__free(g->devs);
	hmap__free(g->streams);
	free(g);
}

static int gpu_open(struct pf *pf, void **st)
{
	struct pf_gpu *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	*st = g;
	g->devs = hmap__new(sizeof(struct pf_dev));
	g->streams = hmap__new(sizeof(struct pf_lanes));
	return g->devs && g->streams ? 0 : -ENOMEM;
}

/* The stream track of a kernel, copy or memset, under its device's track. */
static int gpu_track(struct pf *pf, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m, __u64 *track)
{
	struct pf_gpu *g = st;
	struct pf_lanes *lanes;
	struct pf_dev *d;
	struct gpu_op op;
	__u64 proc, dev_uuid;
	char name[48], desc[160];
	int err;

	if (!gpu_op__read(rec, &op))
		return 0;
	d = hmap__get(g->devs, (struct hkey){ op.pid, op.device }, 1);
	if (!d)
		return -ENOMEM;
	if (!d->uuid) {
		err = pf__process_track(pf, op.pid, op.ts, m, &proc);
		if (err)
			return err;
		d->uuid = pf->next_uuid++;
		d->pid = op.pid;
		d->device = op.device;
		time_bins__init(&d->busy, pf__bins_origin(pf, op.ts), PF_BIN_NS);
		snprintf(name, sizeof(name), "GPU %u", op.device);
		snprintf(desc, sizeof(desc),
			 "Kernels, copies and memsets CUPTI timed on CUDA device %u of this "
			 "process (gpu family), one track per stream.",
			 op.device);
		err = pf__describe_named(pf, op.ts, d->uuid, proc, name, desc);
		if (err)
			return err;
	}
	dev_uuid = d->uuid;
	err = time_bins__add(&d->busy, op.ts, op.dur);
	if (err)
		return err;
	lanes = hmap__get(g->streams, (struct hkey){ (__u64)op.pid << 32 | op.device, op.stream },
			  1);
	if (!lanes)
		return -ENOMEM;
	snprintf(name, sizeof(name), "Stream %u", op.stream);
	err = pf__lanes_pick(pf, lanes, op.ts, op.ts + op.dur, dev_uuid, name, NULL, track);
	return err ? err : 1;
}

static void gpu_flows(const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	const struct bs_gpu_api *a = (const void *)rec;
	const char *name;
	struct gpu_op op;

	if (gpu_is_launching_call(rec, &name)) {
		*out = gpu_flow_id(rec->pid, rec->tid, rec->ts);
	} else if (rec->type == BS_REC_GPU_API && rec->size >= sizeof(*a)) {
		/* CUPTI's record starts the flow when no cuda event carries it. */
		if (!(a->flags & BS_GPU_CALL_CUDA))
			*out = gpu_flow_id(rec->pid, rec->tid, rec->ts);
	} else if (gpu_op__read(rec, &op) && op.call_ts &&
		   op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API)) {
		*in = gpu_flow_id(op.pid, op.tid, op.call_ts);
	}
}

static int gpu_finish(struct pf *pf, void *st, const struct trace_model *m)
{
	struct pf_gpu *g = st;
	struct pf_dev *d;
	size_t it = 0;
	int err = 0;

	while (!err && (d = hmap__next(g->devs, &it, NULL)))
		if (time_bins__used(&d->busy))
			err = pf__bins_counter(
				pf, d->uuid, "GPU busy",
				"Fraction of each 10 ms in which a kernel, copy or memset ran on this "
				"device (overlapping streams count once per operation, capped at 1; "
				"bpfsight stats -r gpu_idle_sum has the exact idle time).",
				&d->busy, 1);
	return err;
}

const struct perfetto_family gpu_perfetto = {
	.open = gpu_open,
	.free = gpu_free,
	.track = gpu_track,
	.flows = gpu_flows,
	.finish = gpu_finish,
};
