// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Steps and ranges on the report's page; see page_bands.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "human.h"
#include "page.h"
#include "page_axis.h"
#include "page_bands.h"
#include "page_lanes.h"

struct band {
	__u64 ts, dur;
	char label[80];
};

struct band_row {
	char name[40];
	int shade;
	struct band *b;
	size_t n, cap;
};

struct page_bands {
	struct band_row rows[PAGE_BAND_ROWS];
	int nrows;
};

struct page_bands *page_bands__new(void)
{
	return calloc(1, sizeof(struct page_bands));
}

void page_bands__free(struct page_bands *b)
{
	if (!b)
		return;
	for (int r = 0; r < b->nrows; r++)
		free(b->rows[r].b);
	free(b);
}

int page__band_row(const struct page *p, const char *name, int shade)
{
	struct page_bands *b = p->bands;

	if (!b)
		return -ENOENT;
	if (b->nrows == PAGE_BAND_ROWS)
		return -E2BIG;
	snprintf(b->rows[b->nrows].name, sizeof(b->rows[0].name), "%s", name);
	b->rows[b->nrows].shade = shade;
	return b->nrows++;
}

int page__band(const struct page *p, int row, __u64 ts, __u64 dur, const char *label)
{
	struct band_row *r;

	if (!p->bands || row < 0 || row >= p->bands->nrows)
		return 0;
	r = &p->bands->rows[row];
	if (array__grow((void **)&r->b, r->n, &r->cap, sizeof(*r->b)))
		return -ENOMEM;
	r->b[r->n] = (struct band){ .ts = ts, .dur = dur };
	snprintf(r->b[r->n++].label, sizeof(r->b[0].label), "%s", label ? label : "");
	return 0;
}

static int by_ts(const void *a, const void *b)
{
	const struct band *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

#define ROW_H 16

/* One rect per band, or per run of bands closer than a column, alternately shaded. */
static void draw_row(const struct page *p, struct band_row *r, double y, FILE *f)
{
	double span = (double)(p->end - p->origin), col = span / LANE_COLUMNS;
	char a[32];
	size_t i, j;
	int k = 0;

	qsort(r->b, r->n, sizeof(*r->b), by_ts);
	fprintf(f, "<g class=\"bands%s\" data-row=\"", r->shade ? " shade" : "");
	page__esc(f, r->name);
	fprintf(f, "\">");
	for (i = 0; i < r->n; i = j) {
		__u64 end = r->b[i].ts + r->b[i].dur;
		double x0 = (double)(r->b[i].ts > p->origin ? r->b[i].ts - p->origin : 0), w;

		/* A run narrower than a column takes the bands that start within one of it. */
		for (j = i + 1; j < r->n && (double)(end - r->b[i].ts) < col &&
				(double)r->b[j].ts < (double)end + col;
		     j++)
			end = r->b[j].ts + r->b[j].dur > end ? r->b[j].ts + r->b[j].dur : end;
		w = (double)(end - p->origin) - x0;
		fprintf(f,
			"<rect class=\"b%d\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\">"
			"<title>",
			k++ % 2, PLOT_X + x0 / span * PLOT_W, y,
			w / span * PLOT_W > 0.3 ? w / span * PLOT_W : 0.3, ROW_H - 2);
		page__esc(f, r->b[i].label);
		fprintf(f, " (%s", human__ns((double)r->b[i].dur, a, sizeof(a)));
		if (j > i + 1)
			fprintf(f, "; and %zu more beside it", j - i - 1);
		fprintf(f, ")</title></rect>");
	}
	fprintf(f, "</g>\n");
}

void page_bands__draw(const struct page *p, const struct page_bands *cb, FILE *f)
{
	struct page_bands *b = (struct page_bands *)cb; /* sorted as drawn */
	int rows = 0, y = 0;

	for (int r = 0; r < b->nrows; r++)
		rows += b->rows[r].n > 0;
	if (!rows || p->end <= p->origin)
		return;
	fprintf(f, "<figure class=\"timeline\" id=\"tl-ranges\"><figcaption>Steps and ranges "
		   "<span class=\"what\">the shaded ones behind every timeline too; drag over any "
		   "timeline to zoom them all, click to reset</span></figcaption>\n");
	page_axis__open(f, p, rows * ROW_H, 0, NULL);
	for (int r = 0; r < b->nrows; r++)
		if (b->rows[r].n)
			draw_row(p, &b->rows[r], PLOT_Y + (y++) * ROW_H, f);
	page_axis__close_plot(f);
	for (int r = 0, i = 0; r < b->nrows; r++)
		if (b->rows[r].n) {
			fprintf(f,
				"<text class=\"lane-name\" x=\"%d\" y=\"%d\" text-anchor=\"end\">",
				PLOT_X - 4, PLOT_Y + (i++) * ROW_H + ROW_H - 5);
			page__esc(f, b->rows[r].name);
			fprintf(f, "</text>");
		}
	fprintf(f, "</svg></figure>\n");
}
