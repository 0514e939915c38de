// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem's records as events (dump, the exports): allocations and frees with the device, the
 * size (a free's from its allocation: the walk's live blocks, mem_live.h), the live bytes of
 * the process's device after it, and the allocator's totals; RSS, growth samples, OOMs.
 */
#include <stdio.h>
#include <stdlib.h>
#include "mem.h"
#include "mem_live.h"
#include "mem_walk.h"
#include "trace_model.h"

const char *mem_device_name(__s16 device, char *buf, size_t len)
{
	if (device == BS_MEM_DEV_CPU)
		snprintf(buf, len, "cpu");
	else
		snprintf(buf, len, "cuda:%d", device);
	return buf;
}

static const char *source_name(__u8 source)
{
	switch (source) {
	case BS_MEM_SRC_CPU:
		return "cpu_reporter";
	case BS_MEM_SRC_REPORT:
		return "profiler_report";
	case BS_MEM_SRC_USDT:
		return "usdt";
	default:
		return "unknown";
	}
}

static void arg_device(struct event *ev, __s16 device)
{
	char dev[16];

	event__arg_strn(ev, "device", mem_device_name(device, dev, sizeof(dev)), sizeof(dev));
}

/* The walk's view of the record it was just fed (mem_walk.h). */
void *mem_walk_new(void)
{
	struct mem_walk *w = calloc(1, sizeof(*w));

	if (w && !(w->live = mem_live__new())) {
		free(w);
		return NULL;
	}
	return w;
}

void mem_walk_observe(void *arg, const struct bs_hdr *rec)
{
	struct mem_walk *w = arg;

	if (rec->type == BS_REC_MEM_ALLOC && rec->size >= sizeof(struct bs_mem_alloc)) {
		const struct bs_mem_alloc *r = (const void *)rec;
		struct mem_block freed = {};
		const struct mem_dev *d;

		w->last_ts = rec->ts;
		w->last_tid = rec->tid;
		w->last_addr = r->addr;
		w->last_bytes = mem_live__apply(w->live, r, 0, &freed);
		w->last_alloc_ts = freed.ts;
		d = mem_live__dev(w->live, rec->pid, r->device);
		w->last_live = d ? d->live : 0;
	} else if (rec->type == BS_REC_MEM_STREAM && rec->size >= sizeof(struct bs_mem_stream)) {
		mem_live__stream(w->live, (const void *)rec);
	} else if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
		   ((const struct bs_exit *)rec)->group_dead) {
		mem_live__forget(w->live, rec->pid);
	}
}

const struct mem_walk *mem_walk__of(const struct trace_model *m, const struct bs_hdr *rec)
{
	const struct mem_walk *w = trace_model__walk(m, &family_mem);
	const struct bs_mem_alloc *r = (const void *)rec;

	if (!w || rec->type != BS_REC_MEM_ALLOC || rec->size < sizeof(*r))
		return NULL;
	return w->last_ts == rec->ts && w->last_tid == rec->tid && w->last_addr == r->addr ? w
											   : NULL;
}

void mem_walk_free(void *arg)
{
	struct mem_walk *w = arg;

	if (!w)
		return;
	mem_live__free(w->live);
	free(w);
}

static int decode_alloc(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	const struct mem_walk *w = mem_walk__of(m, rec);
	int is_free = r->flags & BS_MEM_FREE;
	__u64 bytes = r->bytes;
	int walked = w != NULL;

	ev->name = is_free ? "free" : "alloc";
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=mem */
	if (walked)
		bytes = w->last_bytes;
	arg_device(ev, r->device);
	event__arg_hex(ev, "addr", r->addr);
	event__arg_u64(ev, "bytes", bytes);
	if (is_free && !bytes && r->bytes) /* a CPU Delete's own report of this free (mem_live.h) */
		event__arg_bool(ev, "duplicate", 1);
	else if (is_free && !bytes)
		event__arg_bool(ev, "unseen", 1); /* allocated before the recording saw it */
	if (walked)
		event__arg_u64(ev, "live", w->last_live);
	/* made while the recorder attached, before it took stacks: a site of its own, counted
	 * once (mem_alloc__weight), which the server's mem_peak reads (mem_peak_sql.c) */
	if (!is_free && r->flags & BS_MEM_EARLY)
		event__arg_bool(ev, "early", 1);
	if (!is_free && r->sample_rate) { /* its stack by sampled bytes (--mem-sample-rate) */
		event__arg_u64(ev, "sample_rate", r->sample_rate);
		event__arg_bool(ev, "sampled", !!(r->flags & BS_MEM_SAMPLED));
	}
	if (r->flags & BS_MEM_TOTALS) {
		event__arg_u64(ev, "allocated", r->allocated);
		event__arg_u64(ev, "reserved", r->reserved);
	}
	event__arg_str(ev, "source", source_name(r->source));
	return 1;
}

static int decode_stream(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_mem_stream *r = (const void *)rec;

	ev->name = "stream";
	arg_device(ev, r->device);
	event__arg_hex(ev, "addr", r->addr);
	event__arg_u64(ev, "stream", r->stream);
	event__arg_u64(ev, "requested", r->requested);
	return 1;
}

static int decode_rss(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_mem_rss *r = (const void *)rec;

	ev->name = "rss";
	event__arg_u64(ev, "rss", r->rss);
	event__arg_u64(ev, "anon", r->anon);
	event__arg_u64(ev, "file", r->file);
	event__arg_u64(ev, "shmem", r->shmem);
	return 1;
}

static int decode_grow(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_mem_grow *r = (const void *)rec;

	ev->name = rec->type == BS_REC_MEM_GROW ? "grow" : "shrink";
	ev->stack = trace_model__event_stack(m, rec);
	event__arg_u64(ev, "bytes", r->bytes);
	event__arg_u64(ev, "rss", r->rss);
	return 1;
}

static int decode_oom(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_mem_oom *r = (const void *)rec;

	ev->name = "out_of_memory";
	ev->stack = trace_model__event_stack(m, rec);
	arg_device(ev, r->device);
	event__arg_u64(ev, "bytes", r->bytes);
	if (r->device != BS_MEM_DEV_CPU) {
		event__arg_u64(ev, "allocated", r->allocated);
		event__arg_u64(ev, "reserved", r->reserved);
	}
	event__arg_str(ev, "source", source_name(r->source));
	return 1;
}

/* Instants: an allocation has no duration; Chrome draws them on their thread. */
static const struct export_style alloc_style = { .cat = "cpu_instant_event", .ph = 'i' };
static const struct export_style counter_style = { .ph = 'i' };

const struct rec_decoder mem_decoders[] = {
	{ BS_REC_MEM_ALLOC, sizeof(struct bs_mem_alloc), "mem_alloc", decode_alloc, &alloc_style },
	{ BS_REC_MEM_RSS, sizeof(struct bs_mem_rss), "mem_rss", decode_rss, &counter_style },
	{ BS_REC_MEM_GROW, sizeof(struct bs_mem_grow), "mem_grow", decode_grow, &counter_style },
	{ BS_REC_MEM_SHRINK, sizeof(struct bs_mem_grow), "mem_shrink", decode_grow,
	  &counter_style },
	{ BS_REC_MEM_OOM, sizeof(struct bs_mem_oom), "mem_oom", decode_oom, &counter_style },
	{ BS_REC_MEM_STREAM, sizeof(struct bs_mem_stream), "mem_stream", decode_stream,
	  &counter_style },
	{ 0 },
};
