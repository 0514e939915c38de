// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GPU and NVTX tracks of the Perfetto export (docs/EXPORT.md, "GPU and NVTX"):
 *   - per (process, device) a track "GPU N" in the process, with a child track per stream
 *     ("Stream S") holding its kernels, copies and memsets, and a "GPU busy" counter;
 *   - flows from each launching call (a cuda_api slice of a launch, graph, copy or memset
 *     API; CUPTI's gpu_api slice when no cuda event was matched) to its GPU work;
 *   - NVTX push/pop ranges and marks on a child track "NVTX" (or "NVTX: DOMAIN") of their
 *     thread, as nsys draws them, so they never break the nesting of the thread's calls;
 *     start/end ranges (any concurrency, across threads) on such tracks of the process.
 *
 * Slices of one track must nest. A stream's operations do not overlap unless a CUDA graph ran
 * nodes concurrently, and start/end ranges overlap freely: such a slice goes on another lane,
 * a sibling track of the same name (Perfetto shows same-named siblings as one track), picked
 * as the first lane whose slices all ended by the new slice's start, which holds whatever the
 * order records arrive in. At most PF_MAX_LANES per stream or domain; past that a slice shares
 * the last lane (and may be drawn misnested).
 *
 * The busy counter is the fraction of each PF_BIN_NS bin in which an operation ran,
 * assuming a device's operations do not overlap: concurrent streams count their overlap twice,
 * so it is clamped at 1 (stats -r gpu_idle_sum has the exact union). Bins (time_bins.h) fill in
 * any order, so they are written at the end. Memory: at most 8 bytes per bin per device, i.e.
 * trace duration / 10 ms (2.9 MB per device-hour; time_bins.h keeps only the pages where
 * operations begin or end), plus a few words per stream, lane and NVTX track.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_perfetto.h"
#include "gpu_decode.h"
#include "nvtx_decode.h"
#include "time_bins.h"

#define PF_MAX_LANES 32

struct pf_lanes {
	__u64 uuid[PF_MAX_LANES];
	__u64 end[PF_MAX_LANES]; /* the latest end of a slice on the lane */
	__u32 n;
};

struct pf_dev {
	__u64 uuid;
	__u32 pid, device;
	struct time_bins busy; /* ns of operations per bin */
};

struct pf_gpu {
	struct hmap *devs;	  /* {pid, device} -> pf_dev */
	struct hmap *streams;	  /* {pid << 32 | device, stream} -> pf_lanes */
	struct hmap *nvtx_thread; /* {pid << 32 | tid, domain id} -> track uuid */
	struct hmap *nvtx_async;  /* {pid, domain id} -> pf_lanes */
};

struct pf_gpu *pf_gpu__new(void)
{
	struct pf_gpu *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->devs = hmap__new(sizeof(struct pf_dev));
	g->streams = hmap__new(sizeof(struct pf_lanes));
	g->nvtx_thread = hmap__new(sizeof(__u64));
	g->nvtx_async = hmap__new(sizeof(struct pf_lanes));
	if (!g->devs || !g->streams || !g->nvtx_thread || !g->nvtx_async) {
		pf_gpu__free(g);
		return NULL;
	}
	return g;
}

void pf_gpu__free(struct pf_gpu *g)
{
	struct pf_dev *d;
	size_t it = 0;

	if (!g)
		return;
	while (g->devs && (d = hmap__next(g->devs, &it, NULL)))
		time_bins__free(&d->busy);
	hmap__free(g->devs);
	hmap__free(g->streams);
	hmap__free(g->nvtx_thread);
	hmap__free(g->nvtx_async);
	free(g);
}

/*
 * The lane of a slice [START, END) in L: the first whose slices all end by START, a new one
 * (described as NAME under PARENT) when none does, the last one past PF_MAX_LANES.
 */
static int lanes_pick(struct pf *pf, struct pf_lanes *l, __u64 start, __u64 end, __u64 parent,
		      const char *name, const char *desc, __u64 *uuid)
{
	__u32 i;
	int err;

	for (i = 0; i < l->n && l->end[i] > start; i++)
		;
	if (i == l->n && l->n < PF_MAX_LANES) {
		l->uuid[i] = pf->next_uuid++;
		l->end[i] = 0;
		l->n++;
		err = pf__describe_named(pf, start, l->uuid[i], parent, name, desc);
		if (err)
			return err;
	} else if (i == l->n) {
		i = l->n - 1;
	}
	if (end > l->end[i])
		l->end[i] = end;
	*uuid = l->uuid[i];
	return 0;
}

/* The stream track of a kernel, copy or memset, under its device's track. */
static int gpu_op_track(struct pf *pf, const struct bs_hdr *rec, const struct trace_model *m,
			__u64 *track)
{
	struct pf_gpu *g = pf->gpu;
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
	err = lanes_pick(pf, lanes, op.ts, op.ts + op.dur, dev_uuid, name, NULL, track);
	return err ? err : 1;
}

static const char *nvtx_track_name(const struct trace_model *m, __u32 domain_id, char *buf,
				   size_t len)
{
	const char *domain = nvtx_domain_name(m, domain_id);

	if (!*domain)
		return "NVTX";
	snprintf(buf, len, "NVTX: %s", domain);
	return buf;
}

/* The NVTX track of a domain on EV's thread: push/pop ranges and marks. */
static int nvtx_thread_track(struct pf *pf, const struct event *ev, __u32 domain_id,
			     const struct trace_model *m, __u64 *track)
{
	struct hkey key = { (__u64)ev->pid << 32 | ev->tid, domain_id };
	__u64 *uuid, thread;
	char name[160];
	int err;

	uuid = hmap__get(pf->gpu->nvtx_thread, key, 0);
	if (uuid) {
		*track = *uuid;
		return 1;
	}
	err = pf__thread_track(pf, ev, m, &thread);
	if (err)
		return err;
	uuid = hmap__get(pf->gpu->nvtx_thread, key, 1);
	if (!uuid)
		return -ENOMEM;
	*uuid = *track = pf->next_uuid++;
	err = pf__describe_named(pf, ev->ts, *track, thread,
				 nvtx_track_name(m, domain_id, name, sizeof(name)),
				 "NVTX push/pop ranges and marks of this thread (nvtx family).");
	return err ? err : 1;
}

/* A start/end range: the NVTX lanes of its domain in its process. */
static int nvtx_async_track(struct pf *pf, const struct event *ev, __u32 domain_id,
			    const struct trace_model *m, __u64 *track)
{
	struct pf_lanes *lanes;
	__u64 proc;
	char name[160];
	int err;

	err = pf__process_track(pf, ev->pid, ev->ts, m, &proc);
	if (err)
		return err;
	lanes = hmap__get(pf->gpu->nvtx_async, (struct hkey){ ev->pid, domain_id }, 1);
	if (!lanes)
		return -ENOMEM;
	err = lanes_pick(pf, lanes, ev->ts, ev->ts + ev->dur, proc,
			 nvtx_track_name(m, domain_id, name, sizeof(name)),
			 "NVTX start/end ranges of this process (nvtx family): they may overlap "
			 "and cross threads.",
			 track);
	return err ? err : 1;
}

int pf_gpu__track(struct pf *pf, const struct bs_hdr *rec, const struct event *ev,
		  const struct trace_model *m, __u64 *track)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	const struct bs_nvtx_mark *k = (const void *)rec;

	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
		return gpu_op_track(pf, rec, m, track);
	case BS_REC_NVTX_RANGE:
		if (rec->size < sizeof(*r))
			return 0;
		if (r->flags & BS_NVTX_PUSHPOP)
			return nvtx_thread_track(pf, ev, r->domain_id, m, track);
		return nvtx_async_track(pf, ev, r->domain_id, m, track);
	case BS_REC_NVTX_MARK:
		if (rec->size < sizeof(*k))
			return 0;
		return nvtx_thread_track(pf, ev, k->domain_id, m, track);
	default:
		return 0;
	}
}

void pf_gpu__flows(const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	const struct bs_gpu_api *a = (const void *)rec;
	const char *name;
	struct gpu_op op;

	*out = *in = 0;
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

int pf_gpu__finish(struct pf *pf)
{
	struct pf_dev *d;
	size_t it = 0;
	int err = 0;

	while (!err && (d = hmap__next(pf->gpu->devs, &it, NULL)))
		if (time_bins__used(&d->busy))
			err = pf__bins_counter(
				pf, d->uuid, "GPU busy",
				"Fraction of each 10 ms in which a kernel, copy or memset ran on this "
				"device (overlapping streams count once per operation, capped at 1; "
				"bpfsight stats -r gpu_idle_sum has the exact idle time).",
				&d->busy, 1);
	return err;
}
