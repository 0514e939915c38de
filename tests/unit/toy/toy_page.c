// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy family on the report's page: a timeline of its ticks, a section of its own, a
 * headline figure, each tick a span in its thread's lane and a band of its own row.
 */
#include <errno.h>
#include <stdlib.h>
#include "page.h"
#include "toy.h"

/* The report's page: a timeline of the ticks, and a section of its own. */
struct toy_page {
	struct time_bins bins;
	struct toy_sum sum;
	int kind, row; /* its lanes' kind, its bands' row */
};

static int toy_page_open(const struct page *p, void **st)
{
	struct toy_page *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	page__bins_init(p, &t->bins);
	t->kind = page__lane_kind(p, "toy ticks", 1);
	t->row = page__band_row(p, "toy", 0);
	*st = t;
	return 0;
}

static int toy_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			   const struct trace_model *m)
{
	struct toy_page *t = st;

	if (rec->type != TOY_REC)
		return 0;
	toy_sum__add(&t->sum, rec, m);
	return time_bins__add(&t->bins, rec->ts, ((const struct toy_tick *)rec)->dur) ?:
		       page__lane(p, t->kind, rec->pid, rec->tid, rec->ts,
				  ((const struct toy_tick *)rec)->dur) ?:
		       page__band(p, t->row, rec->ts, ((const struct toy_tick *)rec)->dur, "tick");
}

static void toy_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct toy_page *t = st;
	struct page_series s = { .label = "ticking", .bins = &t->bins };

	s.total = page__total(&t->bins);
	page__chart(p, f, "tl-toy", "Toy", "threads inside a toy tick", &s, 1, 0, "");
}

static void toy_page_sections(const struct page *p, void *st, FILE *f)
{
	struct toy_page *t = st;

	fprintf(f, "<section id=\"toy\"><h2>Toy</h2><p>%llu ticks, %llu in all</p></section>\n",
		(unsigned long long)t->sum.n, (unsigned long long)t->sum.total);
}

static void toy_page_figures(const struct page *p, void *st, FILE *f)
{
	struct toy_page *t = st;
	char value[32];

	snprintf(value, sizeof(value), "%llu", (unsigned long long)t->sum.total);
	page__figure(f, "toy total", value, NULL, "#toy");
}

static void toy_page_free(void *st)
{
	struct toy_page *t = st;

	time_bins__free(&t->bins);
	free(t);
}

const struct page_family toy_page = {
	.open = toy_page_open,
	.record = toy_page_record,
	.timelines = toy_page_timelines,
	.sections = toy_page_sections,
	.figures = toy_page_figures,
	.free = toy_page_free,
};
