// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The nvtx family on the report's page: its outermost ranges as bands on the time axis. */
#include <errno.h>
#include <stdlib.h>
#include "nvtx.h"
#include "page.h"

struct nvtx_page {
	int row;
};

static int nvtx_page_open(const struct page *p, void **st)
{
	struct nvtx_page *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->row = page__band_row(p, "NVTX", 0);
	*st = n;
	return 0;
}

/* Ranges opened inside another of their thread are its parts: the outermost say the phases. */
static int nvtx_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			    const struct trace_model *m)
{
	const struct bs_nvtx_range *r = (const void *)rec;

	if (rec->type != BS_REC_NVTX_RANGE || rec->size < sizeof(*r) || r->depth)
		return 0;
	return page__band(p, ((struct nvtx_page *)st)->row, rec->ts, r->dur,
			  trace_model__string(m, r->name_id));
}

static void nvtx_page_free(void *st)
{
	free(st);
}

const struct page_family nvtx_page = {
	.open = nvtx_page_open,
	.record = nvtx_page_record,
	.free = nvtx_page_free,
};
