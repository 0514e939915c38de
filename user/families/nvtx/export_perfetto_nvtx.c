// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's tracks in the Perfetto export (docs/EXPORT.md, "GPU and NVTX"): push/pop
 * ranges and marks on a child track "NVTX" (or "NVTX: DOMAIN") of their thread, as nsys draws
 * them, so they never break the nesting of the thread's calls; start/end ranges (any
 * concurrency, across threads) on such tracks of the process, one lane (pf__lanes_pick) per
 * set of ranges that overlap. Memory: a few words per NVTX track and lane.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_perfetto.h"
#include "nvtx.h"
#include "nvtx_decode.h"
#include "hmap.h"

struct pf_nvtx {
	struct hmap *thread; /* {pid << 32 | tid, domain id} -> track uuid */
	struct hmap *async;  /* {pid, domain id} -> pf_lanes */
};

static void nvtx_free(void *st)
{
	struct pf_nvtx *n = st;

	hmap__free(n->thread);
	hmap__free(n->async);
	free(n);
}

static int nvtx_open(struct pf *pf, void **st)
{
	struct pf_nvtx *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	*st = n;
	n->thread = hmap__new(sizeof(__u64));
	n->async = hmap__new(sizeof(struct pf_lanes));
	return n->thread && n->async ? 0 : -ENOMEM;
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
static int nvtx_thread_track(struct pf *pf, struct pf_nvtx *n, const struct event *ev,
			     __u32 domain_id, const struct trace_model *m, __u64 *track)
{
	struct hkey key = { (__u64)ev->pid << 32 | ev->tid, domain_id };
	__u64 *uuid, thread;
	char name[160];
	int err;

	uuid = hmap__get(n->thread, key, 0);
	if (uuid) {
		*track = *uuid;
		return 1;
	}
	err = pf__thread_track(pf, ev, m, &thread);
	if (err)
		return err;
	uuid = hmap__get(n->thread, key, 1);
	if (!uuid)
		return -ENOMEM;
	*uuid = *track = pf->next_uuid++;
	err = pf__describe_named(pf, ev->ts, *track, thread,
				 nvtx_track_name(m, domain_id, name, sizeof(name)),
				 "NVTX push/pop ranges and marks of this thread (nvtx family).");
	return err ? err : 1;
}

/* A start/end range: the NVTX lanes of its domain in its process. */
static int nvtx_async_track(struct pf *pf, struct pf_nvtx *n, const struct event *ev,
			    __u32 domain_id, const struct trace_model *m, __u64 *track)
{
	struct pf_lanes *lanes;
	__u64 proc;
	char name[160];
	int err;

	err = pf__process_track(pf, ev->pid, ev->ts, m, &proc);
	if (err)
		return err;
	lanes = hmap__get(n->async, (struct hkey){ ev->pid, domain_id }, 1);
	if (!lanes)
		return -ENOMEM;
	err = pf__lanes_pick(
		pf, lanes, ev->ts, ev->ts + ev->dur, proc,
		nvtx_track_name(m, domain_id, name, sizeof(name)),
		"NVTX start/end ranges of this process (nvtx family): they may overlap "
		"and cross threads.",
		track);
	return err ? err : 1;
}

static int nvtx_track(struct pf *pf, void *st, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m, __u64 *track)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	const struct bs_nvtx_mark *k = (const void *)rec;

	switch (rec->type) {
	case BS_REC_NVTX_RANGE:
		if (rec->size < sizeof(*r))
			return 0;
		if (r->flags & BS_NVTX_PUSHPOP)
			return nvtx_thread_track(pf, st, ev, r->domain_id, m, track);
		return nvtx_async_track(pf, st, ev, r->domain_id, m, track);
	case BS_REC_NVTX_MARK:
		if (rec->size < sizeof(*k))
			return 0;
		return nvtx_thread_track(pf, st, ev, k->domain_id, m, track);
	default:
		return 0;
	}
}

const struct perfetto_family nvtx_perfetto = {
	.open = nvtx_open,
	.free = nvtx_free,
	.track = nvtx_track,
};
