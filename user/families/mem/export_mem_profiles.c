// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Memory as profiles and flame graphs, by allocation stack (the mem family's own exports,
 * docs/EXPORT.md, "Memory profiles"):
 *   pprof-heap              a gzipped profile.proto with Go's heap profile's sample types,
 *                           alloc_objects, alloc_space, inuse_objects and inuse_space (what
 *                           go tool pprof -http, Pyroscope and speedscope read as a heap
 *                           profile), a sample per (process, device, stack)
 *   memory-flamegraph       an SVG flame graph of the bytes live at each device's peak
 *                           (memray's flamegraph)
 *   memory-flamegraph-leaks the same of the bytes still live at the end (memray's --leaks)
 * A sampled allocation counts for the bytes and blocks it stands for (mem_alloc__weight),
 * as in the reports; "in use" and "live" are as mem_leaks and mem_peak count them (mem_log.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "export.h"
#include "flamegraph.h"
#include "hmap.h"
#include "mem.h"
#include "mem_log.h"
#include "mem_site.h"
#include "pprof_profile.h"
#include "trace_model.h"

enum mem_profile { PROF_HEAP, PROF_PEAK, PROF_LEAKS };

struct mem_profiles {
	enum mem_profile kind;
	int fd;
	struct mem_log *log;
	__u64 rate; /* the sample rate of the allocations, when they were sampled */
	__u64 first_ts, last_ts, start_realtime, start_mono;
	char title[160];
};

static void *open_kind(const char *out, const struct trace_meta *meta, int *err,
		       enum mem_profile kind)
{
	struct mem_profiles *st = calloc(1, sizeof(*st));
	static const char *const what[] = { "heap", "memory live at each device's peak",
					    "memory still live at the end" };

	if (!st || !(st->log = mem_log__new())) {
		free(st);
		*err = -ENOMEM;
		return NULL;
	}
	st->kind = kind;
	st->start_realtime = meta->start.realtime_ns;
	st->start_mono = meta->start.mono_ns;
	snprintf(st->title, sizeof(st->title), "%s, by allocation stack: %s", what[kind],
		 meta->target && *meta->target ? meta->target : "recording");
	st->fd = export__create(out);
	if (st->fd < 0) {
		*err = st->fd;
		mem_log__free(st->log);
		free(st);
		return NULL;
	}
	return st;
}

static void *heap_open(const char *out, const struct trace_meta *meta,
		       const struct export_opts *opts, int *err)
{
	return open_kind(out, meta, err, PROF_HEAP);
}

static void *peak_open(const char *out, const struct trace_meta *meta,
		       const struct export_opts *opts, int *err)
{
	return open_kind(out, meta, err, PROF_PEAK);
}

static void *leaks_open(const char *out, const struct trace_meta *meta,
			const struct export_opts *opts, int *err)
{
	return open_kind(out, meta, err, PROF_LEAKS);
}

static int profiles_record(void *vst, const struct bs_hdr *rec, const struct event *ev,
			   const struct trace_model *m)
{
	struct mem_profiles *st = vst;
	const struct bs_mem_alloc *r = (const void *)rec;

	if (rec->type != BS_REC_MEM_ALLOC && rec->type != BS_REC_EXIT)
		return 0;
	mem_log__add(st->log, rec, m);
	if (rec->type == BS_REC_MEM_ALLOC) {
		if (r->sample_rate)
			st->rate = r->sample_rate;
		if (!st->first_ts)
			st->first_ts = rec->ts;
		st->last_ts = rec->ts;
	}
	return st->log->err;
}

/* What a (process, device, stack) allocated and holds, in blocks and bytes (estimates). */
struct heap_sum {
	double alloc_objects, alloc_space, inuse_objects, inuse_space;
};

/* Entry E of L is live where KIND looks: at the end, or at its device's peak. */
static int live_for(const struct mem_log *l, const struct mem_entry *e, size_t i,
		    enum mem_profile kind)
{
	const struct mem_log_dev *d = &l->devs[e->dev];

	if (kind == PROF_PEAK)
		return d->peak && i <= d->peak_entry && e->free_seq > d->peak_entry;
	return e->free_seq == MEM_LOG_LIVE;
}

/* The sums by (stack, device) into a map: (stack, dev) -> struct heap_sum. */
static struct hmap *sums_of(const struct mem_log *l, enum mem_profile kind)
{
	struct hmap *sums = hmap__new(sizeof(struct heap_sum));

	for (size_t i = 0; sums && i < l->n; i++) {
		const struct mem_entry *e = &l->v[i];
		struct heap_sum *s;

		if (!e->weight)
			continue; /* the sampled allocations stand for it */
		s = hmap__get(sums, (struct hkey){ e->stack, e->dev }, 1);
		if (!s) {
			hmap__free(sums);
			return NULL;
		}
		s->alloc_objects += e->weight;
		s->alloc_space += mem_entry__bytes(e);
		if (live_for(l, e, i, kind == PROF_HEAP ? PROF_LEAKS : kind)) {
			s->inuse_objects += e->weight;
			s->inuse_space += mem_entry__bytes(e);
		}
	}
	return sums;
}

/* A stack id of the log as the model has it (NULL: none, or made before stacks). */
static const struct trace_stack *stack_of(const struct trace_model *m, __u32 stack)
{
	return stack && stack != MEM_SITE_STACK_EARLY ? trace_model__stack(m, stack) : NULL;
}

static const char *no_stack(__u32 stack)
{
	return stack == MEM_SITE_STACK_EARLY ? MEM_BEFORE_STACKS : "(no stack)";
}

static int heap_write(struct mem_profiles *st, const struct trace_model *m, struct hmap *sums)
{
	struct pprof_profile *pp = pprof_profile__new();
	const struct heap_sum *s;
	size_t it = 0;
	struct hkey k;
	char dev[16];
	int err;

	if (!pp)
		return -ENOMEM;
	/* Go's heap profile's types, in its order: go tool pprof shows inuse_space first */
	pprof_profile__sample_type(pp, "alloc_objects", "count");
	pprof_profile__sample_type(pp, "alloc_space", "bytes");
	pprof_profile__sample_type(pp, "inuse_objects", "count");
	pprof_profile__sample_type(pp, "inuse_space", "bytes");
	while ((s = hmap__next(sums, &it, &k))) {
		const struct mem_log_dev *d = &st->log->devs[k.b];

		pprof_profile__sample(pp, m, stack_of(m, (__u32)k.a), NULL, no_stack((__u32)k.a));
		pprof_profile__value(pp, llround(s->alloc_objects));
		pprof_profile__value(pp, llround(s->alloc_space));
		pprof_profile__value(pp, llround(s->inuse_objects));
		pprof_profile__value(pp, llround(s->inuse_space));
		pprof_profile__label_num(pp, "pid", d->pid);
		pprof_profile__label_str(pp, "device",
					 mem_device_name(d->device, dev, sizeof(dev)));
		pprof_profile__sample_end(pp);
	}
	/* Go's: a period of the sampling rate in bytes (1: every allocation had its stack) */
	err = pprof_profile__write(pp, st->fd, "space", "bytes", st->rate ? (__s64)st->rate : 1,
				   st->start_realtime >= st->start_mono && st->first_ts
					   ? st->first_ts - st->start_mono + st->start_realtime
					   : 0,
				   st->last_ts - st->first_ts, "inuse_space");
	st->fd = -1;
	pprof_profile__free(pp);
	return err;
}

static int flame_write(struct mem_profiles *st, const struct trace_model *m, struct hmap *sums)
{
	struct flamegraph *g = flamegraph__new("bytes");
	const struct heap_sum *s;
	FILE *f = NULL;
	size_t it = 0;
	struct hkey k;
	int err = g ? 0 : -ENOMEM;

	while (!err && (s = hmap__next(sums, &it, &k)))
		if (llround(s->inuse_space) > 0)
			err = flamegraph__add(g, stack_of(m, (__u32)k.a), 0,
					      (__u64)llround(s->inuse_space), m);
	if (!err && !flamegraph__samples(g))
		err = -ENODATA;
	if (!err && !(f = fdopen(st->fd, "w")))
		err = -errno;
	if (f) {
		st->fd = -1;
		err = flamegraph__svg(g, f, st->title, 1);
		if (ferror(f) && !err)
			err = -EIO;
		if (fclose(f) && !err)
			err = -errno;
	}
	flamegraph__free(g);
	return err;
}

static void profiles_free(struct mem_profiles *st)
{
	if (st->fd >= 0)
		close(st->fd);
	mem_log__free(st->log);
	free(st);
}

static int profiles_finish(void *vst, const struct trace_model *m,
			   const struct trace_status *status)
{
	struct mem_profiles *st = vst;
	struct hmap *sums = st->log->err ? NULL : sums_of(st->log, st->kind);
	int err = st->log->err ? st->log->err : sums ? 0 : -ENOMEM;

	if (!err && !hmap__count(sums))
		err = -ENODATA; /* no allocation: a profile of nothing */
	if (!err)
		err = st->kind == PROF_HEAP ? heap_write(st, m, sums) : flame_write(st, m, sums);
	hmap__free(sums);
	profiles_free(st);
	return err;
}

static void profiles_abort(void *vst)
{
	if (vst)
		profiles_free(vst);
}

const struct exporter export_pprof_heap = {
	.format = "pprof-heap",
	.desc = "tensor memory by allocation stack as a pprof heap profile (go tool pprof)",
	.suffix = ".heap.pb.gz",
	.open = heap_open,
	.record = profiles_record,
	.finish = profiles_finish,
	.abort = profiles_abort,
	.needs = "tensor allocations (record with -t mem)",
};

const struct exporter export_memory_flamegraph = {
	.format = "memory-flamegraph",
	.desc = "a flame graph of the tensor memory live at each device's peak (SVG)",
	.suffix = ".mem.svg",
	.open = peak_open,
	.record = profiles_record,
	.finish = profiles_finish,
	.abort = profiles_abort,
	.needs = "tensor allocations (record with -t mem)",
};

const struct exporter export_memory_flamegraph_leaks = {
	.format = "memory-flamegraph-leaks",
	.desc = "a flame graph of the tensor memory still live at the end (SVG)",
	.suffix = ".leaks.svg",
	.open = leaks_open,
	.record = profiles_record,
	.finish = profiles_finish,
	.abort = profiles_abort,
	.needs = "tensor allocations (record with -t mem)",
};
