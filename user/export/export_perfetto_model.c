// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The export model in Perfetto (export_model.h), bpfsight's own view (EX_OWN). Tracks, each
 * described the first time it is used (docs/EXPORT.md):
 *   a thread's, a process's    the ones export_perfetto.c makes for every event
 *   a thread's named track     a child of the thread's
 *   a process's named track    siblings of one name under the process, one per set of
 *                              slices that overlap (pf__lanes_pick)
 *   a GPU                      "GPU N" in the process, its streams "Stream S" under it, lanes
 *                              when a CUDA graph runs nodes at once
 *   a device                   a root track, as its family names it
 *   a counter                  a counter track per counter (one series), under its track;
 *                              EX_FROM_ZERO's first value follows a 0 at the recording's start
 * Once every record was read (the finish hooks), a process already described keeps its
 * description: names the model learnt since are not news for a counter drawn at the end.
 * Memory: a few words per track and lane.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_perfetto.h"
#include "hmap.h"
#include "string_pool.h"

struct pf_ctr {
	__u64 uuid;
};

int pf_model__init(struct pf *pf)
{
	pf->subs = hmap__new(sizeof(__u64));
	pf->sub_lanes = hmap__new(sizeof(struct pf_lanes));
	pf->gpus = hmap__new(sizeof(__u64));
	pf->gpu_lanes = hmap__new(sizeof(struct pf_lanes));
	pf->devices = hmap__new(sizeof(__u64));
	pf->ctrs = hmap__new(sizeof(struct pf_ctr));
	pf->ctr_names = string_pool__new();
	return pf->subs && pf->sub_lanes && pf->gpus && pf->gpu_lanes && pf->devices && pf->ctrs &&
			       pf->ctr_names
		       ? 0
		       : -ENOMEM;
}

void pf_model__free(struct pf *pf)
{
	hmap__free(pf->subs);
	hmap__free(pf->sub_lanes);
	hmap__free(pf->gpus);
	hmap__free(pf->gpu_lanes);
	hmap__free(pf->devices);
	hmap__free(pf->ctrs);
	string_pool__free(pf->ctr_names);
}

/* Process PID's track; at the end, one already described as it is. */
static int pf_process(struct pf *pf, __u32 pid, __u64 ts, __u64 *uuid)
{
	const struct pf_proc *p = hmap__get(pf->procs, (struct hkey){ .a = pid }, 0);

	if (pf->sink.finishing && p && p->uuid) {
		*uuid = p->uuid;
		return 0;
	}
	return pf__process_track(pf, pid, ts, pf->model, uuid);
}

/* A new uuid in *SLOT, described as NAME under PARENT at TS. */
static int pf_named(struct pf *pf, __u64 *slot, __u64 ts, __u64 parent, const char *name,
		    const char *desc)
{
	*slot = pf->next_uuid++;
	return pf__describe_named(pf, ts, *slot, parent, name, desc);
}

/* GPU DEVICE of PID: "GPU N" in the process. */
static int pf_gpu(struct pf *pf, const struct ex_track *t, __u64 ts, __u64 *uuid)
{
	__u64 *u = hmap__get(pf->gpus, (struct hkey){ t->pid, t->device }, 1), proc;
	char name[32];
	int err;

	if (!u)
		return -ENOMEM;
	if (!*u) {
		err = pf_process(pf, t->pid, ts, &proc);
		if (err)
			return err;
		snprintf(name, sizeof(name), "GPU %u", t->device);
		err = pf_named(pf, u, ts, proc, name, t->desc);
		if (err)
			return err;
	}
	*uuid = *u;
	return 0;
}

/*
 * The uuid of T for an item at TS (a slice's [START, END) picks its lane on tracks whose slices
 * may overlap), described the first time.
 */
static int pf_track(struct pf *pf, const struct ex_track *t, __u64 ts, __u64 start, __u64 end,
		    __u64 *uuid)
{
	struct pf_lanes *lanes;
	__u64 *u, parent;
	char name[32];
	int err;

	switch (t->kind) {
	case EX_THREAD:
		return pf__thread_track_at(pf, t->pid, t->tid, ts, pf->model, uuid);
	case EX_PROCESS:
		return pf_process(pf, t->pid, ts, uuid);
	case EX_GLOBAL:
		*uuid = 0;
		return 0;
	case EX_THREAD_SUB:
		u = hmap__get(pf->subs, (struct hkey){ (__u64)t->pid << 32 | t->tid, t->key }, 0);
		if (u) {
			*uuid = *u;
			return 0;
		}
		err = pf__thread_track_at(pf, t->pid, t->tid, ts, pf->model, &parent);
		if (err)
			return err;
		u = hmap__get(pf->subs, (struct hkey){ (__u64)t->pid << 32 | t->tid, t->key }, 1);
		if (!u)
			return -ENOMEM;
		err = pf_named(pf, u, ts, parent, t->name, t->desc);
		*uuid = *u;
		return err;
	case EX_PROCESS_SUB:
		err = pf_process(pf, t->pid, ts, &parent);
		if (err)
			return err;
		lanes = hmap__get(pf->sub_lanes, (struct hkey){ t->pid, t->key }, 1);
		if (!lanes)
			return -ENOMEM;
		return pf__lanes_pick(pf, lanes, start, end, parent, t->name, t->desc, uuid);
	case EX_GPU:
		return pf_gpu(pf, t, ts, uuid);
	case EX_GPU_STREAM:
		err = pf_gpu(pf, t, ts, &parent);
		if (err)
			return err;
		lanes = hmap__get(pf->gpu_lanes,
				  (struct hkey){ (__u64)t->pid << 32 | t->device, t->stream }, 1);
		if (!lanes)
			return -ENOMEM;
		snprintf(name, sizeof(name), "Stream %u", t->stream);
		return pf__lanes_pick(pf, lanes, start, end, parent, name, NULL, uuid);
	case EX_DEVICE:
		u = hmap__get(pf->devices, (struct hkey){ t->device }, 1);
		if (!u)
			return -ENOMEM;
		if (!*u && (err = pf_named(pf, u, ts, 0, t->name, t->desc)))
			return err;
		*uuid = *u;
		return 0;
	default:
		return -EINVAL;
	}
}

static int pf_ex_event(struct ex_sink *s, const struct ex_event *e)
{
	struct pf *pf = (struct pf *)s;
	const struct event *ev = e->ev;
	__u64 track, out = 0, in = 0;
	int err;

	if (!ev)
		return 0;
	if (e->on.kind == EX_STYLE)
		return pf__draw(pf, e->rec, ev, pf->model);
	err = pf_track(pf, &e->on, ev->ts, ev->ts, ev->ts + ev->dur, &track);
	if (err)
		return err;
	if (e->rec)
		pf__flows(pf, e->rec, &out, &in);
	err = pf__event_start(pf, ev, track, out, in);
	if (!err && ev->dur)
		err = pf__event_end(pf, ev->ts + ev->dur, track);
	return err;
}

/* Counter C's track, described (under its track) the first time, at TS. */
static int pf_counter(struct pf *pf, const struct ex_counter *c, __u64 ts, __u64 **uuid)
{
	struct pf_ctr *k;
	__u64 parent;
	__u32 name;
	int fresh, err;

	name = string_pool__intern(pf->ctr_names, c->name, &fresh);
	if (!name)
		return -ENOMEM;
	k = hmap__get(
		pf->ctrs,
		(struct hkey){ (__u64)c->on.pid << 32 | c->on.device,
			       (__u64)name << 32 | (__u64)c->on.kind << 24 | (c->key & 0xffffff) },
		1);
	if (!k)
		return -ENOMEM;
	*uuid = &k->uuid;
	if (k->uuid)
		return 0;
	err = pf_track(pf, &c->on, ts, ts, ts, &parent);
	if (err)
		return err;
	k->uuid = pf->next_uuid++;
	err = pf__describe_counter(pf, ts, k->uuid, parent, c->name, c->desc,
				   c->unit == EX_UNIT_BYTES   ? CD_UNIT_BYTES
				   : c->unit == EX_UNIT_COUNT ? CD_UNIT_COUNT
							      : 0);
	/* Start the line at zero where recording started, so the first step shows. */
	if (!err && c->flags & EX_FROM_ZERO && pf->sink.start_mono && pf->sink.start_mono < ts)
		err = pf__counter(pf, pf->sink.start_mono, k->uuid, 0, NULL);
	return err;
}

static int pf_ex_counter(struct ex_sink *s, const struct ex_counter *c, __u64 ts,
			 const struct ex_value *v, __u32 n)
{
	struct pf *pf = (struct pf *)s;
	__u64 *uuid;
	int err;

	if (!n)
		return 0;
	err = pf_counter(pf, c, ts, &uuid);
	if (err)
		return err;
	if (v->kind == EX_REAL || v->kind == EX_FIXED)
		return pf__counter(pf, ts, *uuid, 0, &v->d);
	return pf__counter(pf, ts, *uuid, v->kind == EX_UINT ? (__s64)v->u : v->i, NULL);
}

static int pf_ex_track(struct ex_sink *s, const struct ex_track *t, const struct ex_counter *c,
		       __u64 ts)
{
	struct pf *pf = (struct pf *)s;
	__u64 uuid, *cuuid;

	return c ? pf_counter(pf, c, ts, &cuuid) : pf_track(pf, t, ts, ts, ts, &uuid);
}

const struct ex_sink_ops pf_sink_ops = {
	.event = pf_ex_event,
	.counter = pf_ex_counter,
	.track = pf_ex_track,
};
