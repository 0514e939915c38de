// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight report's HTML page (report_html.h): the timelines are summed in time bins
 * (time_bins.c, gil_contention.c: the exports' counters) during one walk of the trace, then
 * drawn as SVG; the tables are the stats reports' own (stats.c), cut to their top rows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "family_stats.h"
#include "array.h"
#include "family.h"
#include "human.h"
#include "page.h"
#include "page_axis.h"
#include "page_bands.h"
#include "page_info.h"
#include "page_lanes.h"
#include "page_summary.h"
#include "page_zoom.h"
#include "records.h"
#include "report.h"
#include "report_html.h"
#include "stats.h"
#include "steps.h"
#include "table.h"
#include "table_view.h"
#include "level_bins.h"
#include "time_bins.h"
#include "trace_walk.h"
#include "msg.h"

struct loss_mark {
	__u64 ts, count;
};

/* The page: the recording's span, the families' states, the loss marks (the page's own). */
struct timelines {
	struct page p;
	void *states[FAMILY_MAX]; /* per families[] index, of those with a page hook */
	struct loss_mark *loss;
	size_t nloss, loss_cap;
	__u64 lost;
};

static int add_loss(struct timelines *tl, const struct bs_loss *l)
{
	if (array__grow((void **)&tl->loss, tl->nloss, &tl->loss_cap, sizeof(*tl->loss)))
		return -ENOMEM;
	tl->loss[tl->nloss++] = (struct loss_mark){ l->h.ts, l->count };
	tl->lost += l->count;
	return 0;
}

static int add_record(struct timelines *tl, const struct bs_hdr *rec, const struct trace_model *m)
{
	int err;

	if (rec->type == BS_REC_LOSS && (err = add_loss(tl, (const void *)rec)))
		return err;
	for_each_family_slot(it, tl->states)
		if (*it.slot && family__stats(it.f)->page->record &&
		    (err = family__stats(it.f)->page->record(&tl->p, *it.slot, rec, m)))
			return err;
	return 0;
}

static void timelines_free(struct timelines *tl)
{
	for_each_family_slot(it, tl->states)
		if (*it.slot)
			family__stats(it.f)->page->free(*it.slot);
	free(tl->loss);
	page_lanes__free(tl->p.lanes);
	page_bands__free(tl->p.bands);
}

/* The row "steps": each process's steps, as the per-step reports had them, a band each. */
static int steps_bands(const struct page *p)
{
	int row = page__band_row(p, "steps", 1);
	const struct step_span *const *v;
	char label[80];
	size_t n;

	v = steps__all(p->steps, &n);
	for (size_t i = 0; row >= 0 && i < n; i++) {
		snprintf(label, sizeof(label), "step %llu", (unsigned long long)v[i]->step);
		if (page__band(p, row, v[i]->ts, v[i]->end - v[i]->ts, label))
			return -ENOMEM;
	}
	return 0;
}

static int collect(struct timelines *tl, const char *path)
{
	const struct rec_decoder *dec;
	const struct trace_status *st;
	const struct bs_hdr *rec;
	struct trace_walk w;
	int ret, status, err = 0;

	if (trace_walk__open(&w, "report", path))
		return EXIT_READ_FAIL;
	tl->p.origin = trace_walk__meta(&w)->start.mono_ns;
	tl->p.lanes = page_lanes__new();
	tl->p.bands = page_bands__new();
	if (!tl->p.lanes || !tl->p.bands)
		err = -ENOMEM;
	for_each_family_while(fit, !err)
		if (family__stats(fit.f)->page)
			err = family__stats(fit.f)->page->open(&tl->p, &tl->states[fit.i]);
	if (!err)
		err = steps_bands(&tl->p);
	while (!err && (ret = trace_walk__next(&w, &rec, &dec)))
		if (ret == 1)
			err = add_record(tl, rec, w.m);
	if (err) {
		trace_walk__close(&w);
		pr_info("%s\n", strerror(-err));
		return EXIT_READ_FAIL;
	}
	status = trace_walk__finish(&w);
	st = trace_walk__status(&w);
	tl->p.end = st->has_end ? st->end.mono_ns : st->last_ts;
	if (tl->p.end < tl->p.origin)
		tl->p.end = tl->p.origin;
	/* The names while the model is here: the legend says "pid 42 (python3)". */
	for_each_family_slot(it, tl->states)
		if (*it.slot && family__stats(it.f)->page->named)
			family__stats(it.f)->page->named(&tl->p, *it.slot, w.m);
	page_summary__focus(&tl->p, tl->p.stats, w.m);
	page_lanes__named(tl->p.lanes, w.m);
	trace_walk__close(&w);
	return status;
}

void page__esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		const char *e = *s == '&'   ? "&amp;"
				: *s == '<' ? "&lt;"
				: *s == '>' ? "&gt;"
				: *s == '"' ? "&quot;"
					    : NULL;

		if (e)
			fputs(e, f);
		else
			fputc(*s, f);
	}
}

/* The mean of bins [a, b) over their width: one drawn column. */
static double column(const struct time_bins *b, __u32 a, __u32 e, double cap)
{
	double ns = 0, v;

	for (__u32 i = a; i < e; i++)
		ns += time_bins__ns(b, i);
	v = e > a ? ns / ((double)(e - a) * REPORT_BIN_NS) : 0;
	return cap > 0 && v > cap ? cap : v;
}

static int by_total(const void *a, const void *b)
{
	const struct page_series *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->label, y->label);
}

#define SVG_H  150
#define PLOT_H (SVG_H - PLOT_Y - AXIS_H)

/* A line as drawn: its label, and its value over a column of bins [A, E) (capped at CAP). */
struct drawn {
	const char *label;
	const void *src;
	double (*column)(const void *src, __u32 a, __u32 e, double cap);
};

static double time_column(const void *src, __u32 a, __u32 e, double cap)
{
	return column(src, a, e, cap);
}

static double level_column(const void *src, __u32 a, __u32 e, double cap)
{
	double v = (double)level_bins__max(src, a, e);

	return cap > 0 && v > cap ? cap : v;
}

/*
 * One timeline: the first REPORT_SERIES of the N lines S (in the order they come), each a step
 * line of at most REPORT_COLUMNS points over the whole recording, on one y scale (0 .. the
 * largest column, or CAP when given), its top labelled in UNIT, values divided by SCALE.
 */
static void chart(const struct page *p, FILE *f, const char *id, const char *title,
		  const char *what, const struct drawn *s, int n, double cap, double scale,
		  const char *unit)
{
	__u32 bins = (__u32)((p->end - p->origin + REPORT_BIN_NS - 1) / REPORT_BIN_NS);
	__u32 cols, shown;
	double ymax = cap, v;

	if (bins > TIME_BINS_MAX)
		bins = TIME_BINS_MAX;
	if (!bins)
		bins = 1;
	cols = bins < REPORT_COLUMNS ? bins : REPORT_COLUMNS;
	shown = n < REPORT_SERIES ? n : REPORT_SERIES;
	if (ymax <= 0) {
		for (__u32 k = 0; k < shown; k++)
			for (__u32 c = 0; c < cols; c++) {
				v = s[k].column(s[k].src, (__u64)c * bins / cols,
						(__u64)(c + 1) * bins / cols, 0);
				ymax = v > ymax ? v : ymax;
			}
	}
	if (ymax <= 0)
		ymax = 1;
	fprintf(f, "<figure class=\"timeline\" id=\"%s\"><figcaption>", id);
	page__esc(f, title);
	fprintf(f, " <span class=\"what\">");
	page__esc(f, what);
	fprintf(f, "</span></figcaption>\n");
	page_axis__open(f, p, PLOT_H, ymax / scale, unit);
	for (__u32 k = 0; k < shown; k++) {
		fprintf(f, "<polyline class=\"s%u\" points=\"", k);
		for (__u32 c = 0; c < cols; c++) {
			v = s[k].column(s[k].src, (__u64)c * bins / cols,
					(__u64)(c + 1) * bins / cols, cap);
			double y = PLOT_Y + PLOT_H - (v / ymax) * PLOT_H;

			fprintf(f, "%.1f,%.1f %.1f,%.1f ", PLOT_X + (double)PLOT_W * c / cols, y,
				PLOT_X + (double)PLOT_W * (c + 1) / cols, y);
		}
		fprintf(f, "\"><title>");
		page__esc(f, s[k].label);
		fprintf(f, "</title></polyline>\n");
	}
	page_axis__close_plot(f);
	fprintf(f, "</svg>\n<ul class=\"legend\">");
	for (__u32 k = 0; k < shown; k++) {
		fprintf(f, "<li class=\"s%u\">", k);
		page__esc(f, s[k].label);
		fprintf(f, "</li>");
	}
	if ((__u32)n > shown)
		fprintf(f, "<li class=\"more\">and %u more, smaller</li>", n - shown);
	fprintf(f, "</ul></figure>\n");
}

void page__chart_scaled(const struct page *p, FILE *f, const char *id, const char *title,
			const char *what, struct page_series *s, int n, double cap, double scale,
			const char *unit)
{
	struct drawn d[REPORT_SERIES];
	int shown = n < REPORT_SERIES ? n : REPORT_SERIES;

	qsort(s, n, sizeof(*s), by_total);
	for (int k = 0; k < shown; k++)
		d[k] = (struct drawn){ s[k].label, s[k].bins, time_column };
	chart(p, f, id, title, what, d, n, cap, scale, unit);
}

void page__chart(const struct page *p, FILE *f, const char *id, const char *title, const char *what,
		 struct page_series *s, int n, double cap, const char *unit)
{
	page__chart_scaled(p, f, id, title, what, s, n, cap, 1, unit);
}

static int by_peak(const void *a, const void *b)
{
	const struct page_level *x = a, *y = b;

	return x->bins->peak < y->bins->peak   ? 1
	       : x->bins->peak > y->bins->peak ? -1
					       : strcmp(x->label, y->label);
}

void page__level_chart(const struct page *p, FILE *f, const char *id, const char *title,
		       const char *what, struct page_level *s, int n)
{
	static const char *const units[] = { " B", " KiB", " MiB", " GiB", " TiB" };
	struct drawn d[REPORT_SERIES];
	int shown = n < REPORT_SERIES ? n : REPORT_SERIES, u = 0;
	double scale = 1;

	qsort(s, n, sizeof(*s), by_peak);
	for (int k = 0; k < shown; k++)
		d[k] = (struct drawn){ s[k].label, s[k].bins, level_column };
	/* The top of the scale is the highest peak drawn: its unit keeps it under 1024. */
	while (n && s[0].bins->peak / scale >= 1024 && u < 4) {
		scale *= 1024;
		u++;
	}
	chart(p, f, id, title, what, d, n, 0, scale, units[u]);
}

double page__total(const struct time_bins *b)
{
	double ns = 0;

	for (__u32 i = 0; i < time_bins__used(b); i++)
		ns += time_bins__ns(b, i);
	return ns;
}

const struct table *page__report(const struct page *p, const char *report)
{
	return p->stats ? stats__table(p->stats, report) : NULL;
}

void page__no_data(FILE *f, const char *id, const char *title, const char *why)
{
	fprintf(f, "<figure class=\"timeline empty\" id=\"%s\"><figcaption>", id);
	page__esc(f, title);
	fprintf(f, "</figcaption><p>");
	page__esc(f, why);
	fprintf(f, "</p></figure>\n");
}

static void loss_chart(FILE *f, const struct timelines *tl)
{
	__u64 span = tl->p.end - tl->p.origin ? tl->p.end - tl->p.origin : 1, max = 0;
	__u64 cols[REPORT_COLUMNS] = {};

	if (!tl->lost) {
		page__no_data(f, "tl-loss", "Loss", "no event was lost");
		return;
	}
	for (size_t i = 0; i < tl->nloss; i++) {
		__u64 off = tl->loss[i].ts > tl->p.origin ? tl->loss[i].ts - tl->p.origin : 0;
		__u64 c = off >= span ? REPORT_COLUMNS - 1 : off * REPORT_COLUMNS / span;

		cols[c] += tl->loss[i].count;
		max = cols[c] > max ? cols[c] : max;
	}
	fprintf(f,
		"<figure class=\"timeline\" id=\"tl-loss\"><figcaption>Loss <span "
		"class=\"what\">events lost, %llu in all (bpfsight info: by cause)</span>"
		"</figcaption>\n",
		(unsigned long long)tl->lost);
	page_axis__open(f, &tl->p, PLOT_H, (double)max, "");
	for (int c = 0; c < REPORT_COLUMNS; c++) {
		double h;

		if (!cols[c])
			continue;
		h = (double)cols[c] / max * PLOT_H;
		fprintf(f,
			"<rect class=\"loss\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
			"<title>%llu lost</title></rect>",
			PLOT_X + (double)PLOT_W * c / REPORT_COLUMNS, PLOT_Y + PLOT_H - h,
			(double)PLOT_W / REPORT_COLUMNS > 2 ? (double)PLOT_W / REPORT_COLUMNS : 2,
			h, (unsigned long long)cols[c]);
	}
	page_axis__close_plot(f);
	fprintf(f, "</svg></figure>\n");
}

void page__bins_init(const struct page *p, struct time_bins *b)
{
	time_bins__init(b, p->origin, REPORT_BIN_NS);
}

/* The families' timelines, the last registered first (the GPU leads), then the losses. */
static void timelines_html(FILE *f, struct timelines *tl)
{
	int n = family__count();

	fprintf(f, "<section id=\"timelines\"><h2>Timelines</h2>\n");
	page_bands__draw(&tl->p, tl->p.bands, f);
	for (int i = n - 1; i >= 0; i--)
		if (tl->states[i] && family__stats(families[i])->page->timelines)
			family__stats(families[i])->page->timelines(&tl->p, tl->states[i], f);
	page_lanes__draw(&tl->p, tl->p.lanes, f);
	loss_chart(f, tl);
	fprintf(f, "</section>\n");
}

/* The headline figures: the page's own, then each family's (in registry order). */
static void figures_html(FILE *f, struct timelines *tl)
{
	fprintf(f, "<section id=\"figures\"><h2>At a glance</h2><div class=\"figs\">\n");
	page_summary__figures(f, &tl->p, tl->p.stats);
	for_each_family_slot(it, tl->states)
		if (*it.slot && family__stats(it.f)->page->figures)
			family__stats(it.f)->page->figures(&tl->p, *it.slot, f);
	fprintf(f, "</div></section>\n");
}

/* A text cell wider than this is cut in the middle (human__shorten), whole on hover. */
#define LONG_CELL 48

const char *page__cell_class(int numeric, const char *text)
{
	/* One word of at most 24 columns: a comm, a state, a title such as "Free-threaded". */
	int word = !strpbrk(text, " \t") && human__width(text) <= 24;

	return numeric ? (word ? " class=\"n w\"" : " class=\"n\"") : word ? " class=\"w\"" : "";
}

/* Cell (R, C) as stats' table mode shows it, its exact value or whole text on hover. */
static void table_cell(FILE *f, const struct table *t, int r, int c)
{
	static const struct table_view people = {}; /* human units, paths' file names */
	char raw[4096], view[4096], cut[256];
	const char *exact = table__cell_text(t, r, c, raw, sizeof(raw));
	const char *shown = table__view_cell(t, r, c, &people, view, sizeof(view));
	const char *unit = table__view_unit(t, c);

	if (!table__col_numeric(t, c) && human__width(shown) > LONG_CELL)
		shown = human__shorten(shown, LONG_CELL, cut, sizeof(cut));
	fprintf(f, "<td%s", page__cell_class(table__col_numeric(t, c), shown));
	if (*shown && strcmp(shown, exact)) {
		fprintf(f, " title=\"");
		page__esc(f, exact);
		fprintf(f, "%s%s\"", unit ? " " : "", unit ? unit : "");
	}
	fprintf(f, ">");
	page__esc(f, shown);
	fprintf(f, "</td>");
}

void page__table(FILE *f, const struct table *t, int max)
{
	static const struct table_view people = {};
	int rows = table__nrows(t), cols = table__ncols(t);
	char title[128];

	if (max > 0 && rows > max)
		rows = max;
	fprintf(f, "<div class=\"scroll\"><table><thead><tr>");
	for (int c = 0; c < cols; c++) {
		if (table__view_hides(t, c, &people))
			continue;
		table__view_title(t, c, &people, title, sizeof(title));
		fprintf(f, "<th%s>", page__cell_class(table__col_numeric(t, c), title));
		page__esc(f, title);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead><tbody>\n");
	for (int r = 0; r < rows; r++) {
		fprintf(f, "<tr>");
		for (int c = 0; c < cols; c++)
			if (!table__view_hides(t, c, &people))
				table_cell(f, t, r, c);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody></table></div>\n");
}

/* The columns page__table left out, 0 on every row (a CPU job's GPU columns). */
static void hidden_columns(FILE *f, const struct table *t)
{
	static const struct table_view people = {};
	char title[128];
	int n = 0;

	for (int c = 0; c < table__ncols(t); c++) {
		if (!table__view_hides(t, c, &people))
			continue;
		fprintf(f, "%s", n++ ? ", " : "; 0 on every row, not shown: ");
		page__esc(f, table__view_title(t, c, &people, title, sizeof(title)));
	}
}

static void table_html(FILE *f, const struct report *rep, const struct table *t)
{
	int rows = table__nrows(t), shown = rows < REPORT_ROWS ? rows : REPORT_ROWS;

	fprintf(f, "<div class=\"report\" id=\"r-%s\"><h3>", rep->name);
	page__esc(f, rep->desc);
	fprintf(f, " <code>%s</code></h3>\n", rep->name);
	page__table(f, t, REPORT_ROWS);
	fprintf(f, "<p class=\"rows\">%d of %d rows%s", shown, rows,
		rows > shown ? " (the first, in the report's order)" : "");
	hidden_columns(f, t);
	fprintf(f, "</p></div>\n");
}

/* 1 when family I lists report NAME before REP (a report two families share is shown once). */
static int listed_before(int i, const struct report *const *rep)
{
	for (int k = 0; k <= i; k++)
		for (const struct report *const *rp = family__stats(families[k])->reports;
		     rp && *rp; rp++) {
			if (rp == rep)
				return 0;
			if (!strcmp((*rp)->name, (*rep)->name))
				return 1;
		}
	return 0;
}

/*
 * Each family's part, all alike: its name and what it records, its own sections (flame graphs,
 * peaks: written aside first, so that a family with nothing to show has no heading), then the
 * tables of its reports with rows.
 */
static void family_html(FILE *f, struct timelines *tl, const struct stats *st, int i, int *shown)
{
	const struct report *const *rp;
	const struct table *t;
	char *own = NULL;
	size_t len = 0;
	int rows = 0;
	FILE *mem;

	for (rp = family__stats(families[i])->reports; rp && *rp; rp++)
		rows += (t = stats__table(st, (*rp)->name)) && table__nrows(t) &&
			!listed_before(i, rp);
	if (tl->states[i] && family__stats(families[i])->page->sections &&
	    (mem = open_memstream(&own, &len))) {
		family__stats(families[i])->page->sections(&tl->p, tl->states[i], mem);
		fclose(mem);
	}
	if (rows || len) {
		fprintf(f,
			"<section class=\"family\" id=\"family-%s\"><h2>%s <span class=\"what\">",
			families[i]->name, families[i]->name);
		page__esc(f, families[i]->desc);
		fprintf(f, "</span></h2>\n%s", own ? own : "");
		for (rp = family__stats(families[i])->reports; rp && *rp; rp++)
			if ((t = stats__table(st, (*rp)->name)) && table__nrows(t) &&
			    !listed_before(i, rp)) {
				table_html(f, *rp, t);
				(*shown)++;
			}
		fprintf(f, "</section>\n");
	}
	free(own);
}

static void families_html(FILE *f, struct timelines *tl, const struct stats *st, int *shown)
{
	for_each_family(it)
		family_html(f, tl, st, it.i, shown);
	if (!*shown)
		fprintf(f, "<section id=\"reports\"><p>No report has rows.</p></section>\n");
}

/* Colours of the series and both themes: readable on a laptop, light or dark. */
static const char style[] =
	":root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0;"
	"--card:#f6f8fa;--c0:#0969da;--c1:#cf222e;--c2:#1a7f37;--c3:#8250df;--c4:#bc4c00;"
	"--c5:#0a7b83;--c6:#bf3989;--c7:#6e7781}\n"
	"@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;"
	"--line:#3d444d;--card:#151b23;--c0:#4493f8;--c1:#f85149;--c2:#3fb950;--c3:#ab7df8;"
	"--c4:#db6d28;--c5:#39c5cf;--c6:#db61a2;--c7:#9198a1}}\n"
	"body{margin:0 auto;max-width:1100px;padding:16px 24px;background:var(--bg);"
	"color:var(--fg);font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid var(--line);"
	"padding-bottom:4px;margin-top:28px}h3{font-size:15px;margin:18px 0 6px;"
	"font-family:ui-monospace,monospace}\n"
	".sub,.what,.rows,footer{color:var(--mute)}.what{font-weight:normal;font-size:13px}\n"
	"pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px;"
	"overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,monospace}\n"
	"figure{margin:14px 0;background:var(--card);border:1px solid var(--line);"
	"border-radius:6px;padding:8px 12px}figcaption{font-weight:600}\n"
	"svg{width:100%;height:auto;display:block}.axis line{stroke:var(--line)}"
	".axis text{fill:var(--mute);font-size:11px}\n"
	"polyline{fill:none;stroke-width:1.5}rect.loss{fill:var(--c1)}"
	"svg.plot *{vector-effect:non-scaling-stroke}figure.timeline>svg{cursor:crosshair;"
	"user-select:none}.bands rect{fill:var(--c3);opacity:.35}.bands rect.b1{opacity:.2}"
	"svg.plot .shade rect{opacity:.1}svg.plot .shade rect.b1{opacity:.05}"
	".lane-name{fill:var(--fg);font-size:10px}"
	"path.k0{fill:var(--c0)}path.k1{fill:var(--c1)}path.k2{fill:var(--c2)}"
	"path.k3{fill:var(--c3)}path.k4{fill:var(--c4)}path.k5{fill:var(--c5)}"
	"path.k6{fill:var(--c6)}path.k7{fill:var(--c7)}\n"
	".legend{list-style:none;padding:0;margin:4px 0 0;display:flex;flex-wrap:wrap;gap:14px;"
	"font-size:12px}.legend li::before{content:'';display:inline-block;width:12px;height:3px;"
	"margin-right:5px;vertical-align:middle;background:currentColor}.legend .more::before"
	"{display:none}\n"
	".s0{stroke:var(--c0);color:var(--c0)}.s1{stroke:var(--c1);color:var(--c1)}"
	".s2{stroke:var(--c2);color:var(--c2)}.s3{stroke:var(--c3);color:var(--c3)}"
	".s4{stroke:var(--c4);color:var(--c4)}.s5{stroke:var(--c5);color:var(--c5)}"
	".s6{stroke:var(--c6);color:var(--c6)}.s7{stroke:var(--c7);color:var(--c7)}\n"
	".empty p{margin:4px 0;color:var(--mute)}.scroll{overflow-x:auto}\n"
	"table{border-collapse:collapse;font:12px ui-monospace,monospace}"
	"th,td{padding:3px 6px;border-bottom:1px solid var(--line);text-align:left;"
	"vertical-align:top}td{overflow-wrap:anywhere}td.n,.w{white-space:nowrap}"
	"th{position:sticky;top:0;background:var(--card)}.n{text-align:right}\n"
	".family section h2{font-size:15px;border:0;margin-top:14px}h3 code{font-weight:normal;"
	"color:var(--mute)}h3{font-family:inherit}\n"
	"a{color:var(--c0)}#verdict .headline{font-size:16px;font-weight:600;margin:6px 0}\n"
	".claims{list-style:none;padding:0;margin:6px 0}.claims li{display:grid;"
	"grid-template-columns:1em 5.5em 3.8em 1fr;gap:8px;padding:2px 0}.claims .detail"
	"{color:var(--mute)}.claims .share{text-align:right;font-variant-numeric:tabular-nums}"
	".claims .mark{color:var(--c1);font-weight:700}.claims .text{overflow-wrap:anywhere}"
	".more,.legend-note{color:var(--mute);font-size:12px}\n"
	".ledger .bar{display:flex;height:18px;border:1px solid var(--line);border-radius:3px;"
	"overflow:hidden;margin:4px 0}.ledger .seg{display:block;height:100%}.ledger .rest{"
	"background:var(--line)}.ledger-of{margin:8px 0 2px;font-size:13px}.ledger-keys{list-style:"
	"none;padding:0;margin:2px 0 8px;font-size:12px}.ledger-keys li::before{content:'';"
	"display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:middle;"
	"background:currentColor}.ledger-keys .share{display:inline-block;min-width:3.4em;"
	"color:var(--fg)}"
	".b0{background:var(--c0);color:var(--c0)}.b1{background:var(--c1);color:var(--c1)}"
	".b2{background:var(--c2);color:var(--c2)}.b3{background:var(--c3);color:var(--c3)}"
	".b4{background:var(--c4);color:var(--c4)}.b5{background:var(--c5);color:var(--c5)}"
	".b7{background:var(--c7);color:var(--c7)}.ledger-keys li{background:none}\n"
	".figs{display:flex;flex-wrap:wrap;gap:10px}.fig{display:flex;flex-direction:column;"
	"min-width:130px;max-width:340px;padding:8px 12px;background:var(--card);border:1px "
	"solid var(--line);border-radius:6px;color:inherit;text-decoration:none}"
	".fig .v{font-size:20px;font-weight:600}.fig .l{font-size:12px;color:var(--mute);"
	"overflow-wrap:anywhere}a.fig:hover{border-color:var(--c0)}\n"
	"summary{cursor:pointer;color:var(--mute)}table.kv th{white-space:nowrap;"
	"position:static;background:none}table.kv tr.sub th{padding-left:22px;"
	"font-weight:normal}table.info{margin:8px 0}\n"
	"p.warn{color:#b3261e;font-weight:600}\n"
	"footer{margin-top:28px;font-size:12px;border-top:1px solid var(--line);padding-top:8px}\n";

/* The page's head, its style and its header, for WHAT (a trace's path, a server's URL). */
static void page_head(FILE *f, const char *what)
{
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
		   "<title>bpfsight report: ");
	page__esc(f, what);
	fprintf(f,
		"</title>\n<style>\n%s</style></head>\n<body>\n<header><h1>bpfsight report</h1>"
		"<p class=\"sub\">",
		style);
	page__esc(f, what);
	fprintf(f, "</p></header>\n");
}

int report_html__write_from(const struct report_from_input *in, FILE *f)
{
	page_head(f, in->from);
	if (in->warning) {
		fprintf(f, "<p class=\"warn\" id=\"lost\">");
		page__esc(f, in->warning);
		fprintf(f, "</p>\n");
	}
	page_summary__verdict_of(f, in->verdict);
	fprintf(f, "<section id=\"reports\"><h2>Reports, computed in the server</h2>\n");
	for (int i = 0; i < in->ntables; i++) {
		const struct table *t = in->tables[i];
		int rows = table__nrows(t), shown = rows < REPORT_ROWS ? rows : REPORT_ROWS;

		fprintf(f, "<div class=\"report\" id=\"r-");
		page__esc(f, table__name(t));
		fprintf(f, "\"><h3><code>");
		page__esc(f, table__name(t));
		fprintf(f, "</code></h3>\n");
		if (rows)
			page__table(f, t, REPORT_ROWS);
		fprintf(f, "<p class=\"rows\">%d of %d rows%s</p>\n", shown, rows,
			rows > shown ? " (the first, in the report's order)" : "");
		/* its sentences (nccl_stragglers': who made the others wait), as stats prints them */
		for (int k = 0; k < table__nnotes(t); k++) {
			fprintf(f, "<p class=\"note\">");
			page__esc(f, table__get_note(t, k));
			fprintf(f, "</p>\n");
		}
		fprintf(f, "</div>\n");
	}
	fprintf(f, "</section>\n<footer>Computed by bpfsight ");
	page__esc(f, in->version);
	fprintf(f, " as SQL in the server, the verdict from its answers: no timelines or flame "
		   "graphs, the events stay there. The full reports: <code>bpfsight stats "
		   "--from</code> (docs/CLICKHOUSE.md).</footer>\n</body></html>\n");
	return ferror(f) ? -EIO : 0;
}

int report_html__write(const struct report_input *in, FILE *f)
{
	struct timelines tl = { .p.stats = in->stats, .p.steps = stats__steps(in->stats) };
	int status, reports = 0;

	status = collect(&tl, in->path);
	if (status == EXIT_READ_FAIL) {
		timelines_free(&tl);
		return status;
	}
	page_head(f, in->path);
	page_summary__verdict(f, in->stats);
	figures_html(f, &tl);
	page_info__write(f, in->info_text);
	timelines_html(f, &tl);
	families_html(f, &tl, in->stats, &reports);
	fprintf(f, "<footer>Summarized by bpfsight ");
	page__esc(f, in->version);
	fprintf(f,
		": the whole recording (%.3f s) in %llu ms bins, at most %d points per line and "
		"%d lines per timeline (the largest), the first %d rows of each of the %d "
		"reports with rows",
		(double)(tl.p.end - tl.p.origin) / 1e9, REPORT_BIN_NS / 1000000, REPORT_COLUMNS,
		REPORT_SERIES, REPORT_ROWS, reports);
	for_each_family_slot(it, tl.states) {
		const char *note = *it.slot && family__stats(it.f)->page->footnote
					   ? family__stats(it.f)->page->footnote(*it.slot)
					   : NULL;

		if (note)
			fputs(note, f);
	}
	fprintf(f, ". The full data: <code>bpfsight stats</code>, <code>bpfsight export</code>."
		   "</footer>\n");
	page_zoom__script(f, &tl.p);
	fprintf(f, "</body></html>\n");
	timelines_free(&tl);
	return status;
}
