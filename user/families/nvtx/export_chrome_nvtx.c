// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's ranges in the Chrome export, as Kineto writes them: push/pop ranges are
 * "ph":"X" of cat "user_annotation" on their thread; start/end ranges (any concurrency, across
 * threads) an async pair, "ph":"b" on the starting thread and "ph":"e" on the ending one ("id2"
 * local to the process: the range id). Marks and names are instants by their styles.
 *
 * In traces of both gpu and nvtx, each range is also projected onto the streams that ran the
 * GPU work its thread launched inside it (nvtx_proj.c, nvtx_gpu_proj_sum's projection):
 * "ph":"X" of cat "gpu_user_annotation" per (range, device, stream), from the first
 * operation's start to the last one's end, 1 ns wider on each side as Kineto draws them (so
 * they enclose their kernels in the viewers). Written at the end: the projection needs every
 * range and operation, the one memory use of the export that grows with events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_chrome.h"
#include "nvtx.h"
#include "nvtx_proj.h"

/* The state: the projection (struct nvtx_proj), only in traces that recorded the GPU too. */
static int nvtx_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	if (!chrome_has_family(meta, "gpu") || !chrome_has_family(meta, "nvtx"))
		return 0;
	*st = nvtx_proj__new();
	return *st ? 0 : -ENOMEM;
}

static void nvtx_free(void *st)
{
	nvtx_proj__free(st);
}

/* Ranges and GPU operations (the gpu family's records) as they come, to join at the end. */
static int nvtx_observe(struct chrome *c, void *st, const struct bs_hdr *rec,
			const struct trace_model *m)
{
	return st ? nvtx_proj__add(st, rec, m) : 0;
}

static int nvtx_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	const struct bs_nvtx_range *r = (const void *)rec;

	if (rec->type != BS_REC_NVTX_RANGE)
		return 0;
	if (r->flags & BS_NVTX_PUSHPOP) {
		chrome_complete(c, "user_annotation", ev->name, ev->pid, ev->tid, ev->ts, ev->dur);
		chrome_plain_args(c, ev);
		fputc('}', c->f);
		return 1;
	}
	if (chrome_thread(c, rec->pid, r->end_tid))
		return -ENOMEM;
	chrome_begin(c, 'b', "user_annotation", ev->name, ev->pid, ev->tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)r->range_id);
	chrome_us(c->f, ev->ts);
	chrome_plain_args(c, ev);
	fputc('}', c->f);
	chrome_begin(c, 'e', "user_annotation", ev->name, ev->pid, r->end_tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)r->range_id);
	chrome_us(c->f, ev->ts + ev->dur);
	fputc('}', c->f);
	return 1;
}

/* Operations of one range, grouped by (device, stream) to project it stream by stream. */
struct chrome_proj {
	struct chrome *c;
	struct nvtx_proj_op *ops;
	size_t cap;
};

static int stream_cmp(const void *x, const void *y)
{
	const struct nvtx_proj_op *a = x, *b = y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return (a->stream > b->stream) - (a->stream < b->stream);
}

/* Kineto's gpu_user_annotation events of range R: one per stream its operations ran on. */
static int chrome_annotation(void *arg, const struct nvtx_proj_range *r,
			     const struct nvtx_proj_op *ops, size_t n)
{
	struct chrome_proj *p = arg;
	struct chrome *c = p->c;

	if (n > p->cap) {
		struct nvtx_proj_op *v = realloc(p->ops, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->ops = v;
		p->cap = n;
	}
	memcpy(p->ops, ops, n * sizeof(*ops));
	qsort(p->ops, n, sizeof(*p->ops), stream_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		__u64 first = p->ops[i].ts, last = p->ops[i].ts + p->ops[i].dur;

		for (j = i + 1; j < n && !stream_cmp(&p->ops[i], &p->ops[j]); j++) {
			first = p->ops[j].ts < first ? p->ops[j].ts : first;
			if (p->ops[j].ts + p->ops[j].dur > last)
				last = p->ops[j].ts + p->ops[j].dur;
		}
		/* 1 ns earlier and later, as Kineto writes them: the viewers then nest the
		 * kernels that start or end with the range inside it. */
		first -= first ? 1 : 0;
		chrome_complete(c, "gpu_user_annotation", r->text, p->ops[i].device,
				p->ops[i].stream, first, last + 1 - first);
		fputs(",\"args\":{}}", c->f);
	}
	return ferror(c->f) ? chrome_err(c) : 0;
}

/*
 * The gpu_user_annotation events, once every record was seen. Their pid and tid are streams
 * the gpu family drew operations on: it names them.
 */
static int nvtx_annotations(struct chrome *c, void *st)
{
	struct chrome_proj p = { c, NULL, 0 };
	int err;

	if (!st)
		return 0;
	err = nvtx_proj__join(st, chrome_annotation, &p);
	free(p.ops);
	return err;
}

const struct chrome_family nvtx_chrome = {
	.open = nvtx_open,
	.free = nvtx_free,
	.observe = nvtx_observe,
	.draw = nvtx_draw,
	.finish = nvtx_annotations,
};
