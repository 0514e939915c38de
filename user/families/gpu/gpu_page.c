// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The gpu family on the report's page: per device, the share of time a GPU operation ran. */
#include <errno.h>
#include <stdlib.h>
#include "gpu.h"
#include "gpu_decode.h"
#include "human.h"
#include "page.h"
#include "table.h"

#define MAX_GPUS 64

struct gpu_page {
	struct time_bins busy[MAX_GPUS];
	__u32 dev[MAX_GPUS], n, dropped;
};

static int gpu_page_open(const struct page *p, void **st)
{
	*st = calloc(1, sizeof(struct gpu_page));
	return *st ? 0 : -ENOMEM;
}

static int gpu_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			   const struct trace_model *m)
{
	struct gpu_page *g = st;
	struct gpu_op op;
	__u32 i;

	if (!gpu_op__read(rec, &op))
		return 0;
	for (i = 0; i < g->n && g->dev[i] != op.device; i++)
		;
	if (i == g->n) {
		if (i == MAX_GPUS) {
			g->dropped++;
			return 0;
		}
		g->dev[i] = op.device;
		page__bins_init(p, &g->busy[i]);
		g->n++;
	}
	return time_bins__add(&g->busy[i], op.ts, op.dur);
}

/* The job called the CUDA runtime or driver (cuda_api_sum has rows): no GPU work is news. */
static int called_cuda(const struct page *p)
{
	const struct table *t = page__report(p, "cuda_api_sum");

	return t && table__nrows(t) > 0;
}

static void gpu_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct gpu_page *g = st;
	struct page_series s[MAX_GPUS];

	for (__u32 i = 0; i < g->n; i++) {
		snprintf(s[i].label, sizeof(s[i].label), "GPU %u", g->dev[i]);
		s[i].bins = &g->busy[i];
		s[i].total = page__total(&g->busy[i]);
	}
	if (g->n)
		page__chart(p, f, "tl-gpu", "GPU busy",
			    "per device: share of time with a kernel, copy or memset running", s,
			    g->n, 1.0, "");
	else if (called_cuda(p))
		page__no_data(f, "tl-gpu", "GPU busy", "no GPU operation recorded (gpu family)");
	/* else a CPU job: no GPU panel at all. */
}

/* Each device's busy share of the recording (the first four). */
static void gpu_page_figures(const struct page *p, void *st, FILE *f)
{
	struct gpu_page *g = st;
	double span = (double)(p->end - p->origin);
	char label[32], value[32], exact[96], a[32], b[32];

	for (__u32 i = 0; i < g->n && i < 4 && span > 0; i++) {
		double busy = page__total(&g->busy[i]);

		snprintf(label, sizeof(label), "GPU %u busy", g->dev[i]);
		snprintf(value, sizeof(value), "%.1f%%", 100 * busy / span);
		snprintf(exact, sizeof(exact), "%s of the %s recorded",
			 human__ns(busy, a, sizeof(a)), human__ns(span, b, sizeof(b)));
		page__figure(f, label, value, exact, "#tl-gpu");
	}
}

static const char *gpu_page_footnote(void *st)
{
	return ((struct gpu_page *)st)->dropped
		       ? "; GPU operations of devices past the 64th are not drawn"
		       : NULL;
}

static void gpu_page_free(void *st)
{
	struct gpu_page *g = st;

	if (!g)
		return;
	for (__u32 i = 0; i < g->n; i++)
		time_bins__free(&g->busy[i]);
	free(g);
}

const struct page_family gpu_page = {
	.open = gpu_page_open,
	.record = gpu_page_record,
	.timelines = gpu_page_timelines,
	.figures = gpu_page_figures,
	.footnote = gpu_page_footnote,
	.free = gpu_page_free,
};
