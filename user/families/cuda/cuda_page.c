// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family on the report's page: each thread's CUDA calls in its lane, and the
 * capture ranges (cudaProfilerStart to cudaProfilerStop, as --capture-range=cudaProfilerApi
 * keeps them) as bands.
 */
#include <errno.h>
#include <stdlib.h>
#include "cuda.h"
#include "hmap.h"
#include "page.h"

struct cuda_page {
	int calls, row;	   /* the lanes' kind, the bands' row */
	struct hmap *open; /* {pid} -> __u64: when its open range began */
};

static int cuda_page_open(const struct page *p, void **st)
{
	struct cuda_page *c = calloc(1, sizeof(*c));

	if (!c || !(c->open = hmap__new(sizeof(__u64)))) {
		free(c);
		return -ENOMEM;
	}
	c->calls = page__lane_kind(p, "CUDA calls", 1);
	c->row = page__band_row(p, "capture", 1);
	*st = c;
	return 0;
}

static int cuda_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			    const struct trace_model *m)
{
	const struct bs_ucall *r = (const void *)rec;
	struct cuda_page *c = st;
	const struct ucall_api *api;
	__u64 *start;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*r))
		return 0;
	api = ucall_table__api(&cuda_table, r->fn);
	if (api && (api->flags & (CUDA_F_PROFILER_START | CUDA_F_PROFILER_STOP))) {
		start = hmap__get(c->open, (struct hkey){ rec->pid }, 1);
		if (!start)
			return -ENOMEM;
		if ((api->flags & CUDA_F_PROFILER_START) && !*start)
			*start = rec->ts;
		else if ((api->flags & CUDA_F_PROFILER_STOP) && *start) {
			if (page__band(p, c->row, *start, rec->ts + r->dur - *start,
				       "cudaProfilerStart to cudaProfilerStop"))
				return -ENOMEM;
			*start = 0;
		}
	}
	/* Calls made inside another (the runtime's driver calls) are its own time. */
	return r->depth ? 0 : page__lane(p, c->calls, rec->pid, rec->tid, rec->ts, r->dur);
}

/* A range still open when the recording stopped ends with it. */
static int cuda_page_named(const struct page *p, void *st, const struct trace_model *m)
{
	struct cuda_page *c = st;
	size_t it = 0;
	__u64 *start;

	while ((start = hmap__next(c->open, &it, NULL)))
		if (*start && p->end > *start &&
		    page__band(p, c->row, *start, p->end - *start, "cudaProfilerStart (no stop)"))
			return -ENOMEM;
	return 0;
}

static void cuda_page_free(void *st)
{
	struct cuda_page *c = st;

	if (c)
		hmap__free(c->open);
	free(c);
}

const struct page_family cuda_page = {
	.open = cuda_page_open,
	.record = cuda_page_record,
	.named = cuda_page_named,
	.free = cuda_page_free,
};
