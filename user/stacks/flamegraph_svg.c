// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A flame graph drawn as SVG (flamegraph.h), as flamegraph.pl and inferno draw one: every frame
 * a <g> with its tooltip (<title>), its rectangle and a label where it fits, so the file is a
 * flame graph without script too; the inline script (flamegraph_js.c) adds click-to-zoom,
 * search and the details line, from each frame's place and width in the graph's unit
 * (data-x, data-n), exactly, at whatever width the graph is shown.
 */
#include <errno.h>
#include <string.h>
#include "flamegraph.h"
#include "flamegraph_js.h"
#include "flamegraph_tree.h"
#include "records.h"
#include "stack_format.h"

#define WIDTH		1200.0
#define ROW		17
#define TOP		24  /* the title line and the buttons */
#define BOTTOM		46  /* the details line and the footer's two */
#define MIN_PX		0.1 /* standalone (export --format svg): every frame a viewer can zoom to */
#define MIN_PX_EMBEDDED 0.5 /* in the report: bounded by its width, not by the stacks */
#define MAX_ROWS	256

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

/* Warm colours for native code, cool for Python, grey for markers, as flamegraph.pl's
 * palettes (the hue varies with the name so neighbours differ). */
static void colour(const struct node *n, char *buf, size_t len)
{
	unsigned h = 2166136261u;

	for (const char *c = n->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	switch (n->kind) {
	case BS_FRAME_PYTHON:
		snprintf(buf, len, "hsl(%u,55%%,%u%%)", 190 + h % 40, 55 + (h >> 8) % 15);
		break;
	case BS_FRAME_CUT:
	case FRAME_FOLDED:
		snprintf(buf, len, "hsl(0,0%%,%u%%)", 70 + h % 10);
		break;
	case STACK_FRAME_KERNEL:
		snprintf(buf, len, "hsl(30,80%%,60%%)");
		break;
	default:
		snprintf(buf, len, "hsl(%u,80%%,%u%%)", h % 55, 55 + (h >> 8) % 15);
	}
}

/* The name a frame is shown with: a folded frame says how many frames it stands for. */
static const char *label(const struct node *n, char *buf, size_t len)
{
	if (n->kind != FRAME_FOLDED)
		return n->name;
	if (n->fold_min == n->fold_max)
		snprintf(buf, len, "[%u frames folded]", n->fold_min);
	else
		snprintf(buf, len, "[%u-%u frames folded]", n->fold_min, n->fold_max);
	return buf;
}

struct draw_ctx {
	FILE *f;
	int rows;      /* drawn, the bottom one row 0 */
	double scale;  /* pixels per unit */
	__u64 total;   /* the root's count */
	double min_px; /* narrower frames are left out */
	const char *unit;
};

/* The label's text that fits W pixels: about 7 px a character, ".." where it is cut. */
static void text(FILE *f, const char *name, double x, int y, double w)
{
	int chars = (int)(w / 7) - 1;
	char cut[512];

	if (w <= 30)
		return;
	fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 3, y + ROW - 5);
	if ((int)strlen(name) <= chars) {
		esc(f, name);
	} else if (chars > 2) {
		snprintf(cut, sizeof(cut), "%.*s..", chars - 2, name);
		esc(f, cut);
	}
	fprintf(f, "</text>");
}

/* Draw N's children from OFF (in the unit) at ROW (0 = the bottom); returns frames left out. */
static __u64 draw(const struct draw_ctx *d, const struct node *n, __u64 off, int row)
{
	__u64 hidden = 0;
	char fill[48], buf[64];

	for (const struct node *c = n->child; c; off += c->count, c = c->next) {
		double w = c->count * d->scale, x = off * d->scale;
		int y = (d->rows - row - 1) * ROW;
		const char *name = label(c, buf, sizeof(buf));

		if (w < d->min_px || row >= MAX_ROWS) {
			hidden++;
			continue;
		}
		colour(c, fill, sizeof(fill));
		fprintf(d->f, "<g data-x=\"%llu\" data-n=\"%llu\"><title>", (unsigned long long)off,
			(unsigned long long)c->count);
		esc(d->f, name);
		fprintf(d->f,
			" (%llu %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\"/>",
			(unsigned long long)c->count, d->unit, 100.0 * c->count / d->total, x, y, w,
			ROW - 1, fill);
		text(d->f, name, x, y, w);
		fprintf(d->f, "</g>\n");
		hidden += draw(d, c, off, row + 1);
	}
	return hidden;
}

/* The frames' looks, scoped to the graph (an HTML page holds more than one). */
static const char style[] =
	".flame>text{fill:var(--fg,#000)}.flame g text{fill:#000;pointer-events:none}"
	".flame g[data-n]{cursor:pointer}.flame g[data-n]:hover rect{stroke:#000;stroke-width:.5}"
	".flame .fg-hit rect{fill:#e040e0}.flame .fg-anc rect{opacity:.55}"
	".flame .fg-btn{cursor:pointer;fill:var(--c0,#0969da)}";

int flamegraph__svg(const struct flamegraph *g, FILE *f, const char *title, int standalone)
{
	int rows = (g->depth < MAX_ROWS ? g->depth : MAX_ROWS) + 1;
	int height = rows * ROW + TOP + BOTTOM;
	__u64 total = g->root.count, hidden;
	struct draw_ctx d = {
		.f = f,
		.rows = rows - 1,
		.scale = total ? WIDTH / total : 0,
		.total = total,
		.min_px = standalone ? MIN_PX : MIN_PX_EMBEDDED,
		.unit = g->unit,
	};

	if (standalone)
		fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flame\" viewBox=\"0 0 %d %d\"%s"
		" font-family=\"monospace\" font-size=\"11\" data-total=\"%llu\" data-unit=\"",
		(int)WIDTH, height,
		standalone ? " width=\"1200\"" : " preserveAspectRatio=\"xMinYMin meet\"",
		(unsigned long long)total);
	esc(f, g->unit);
	fprintf(f, "\">\n<style><![CDATA[%s]]></style>\n", style);
	if (standalone)
		fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
	fprintf(f, "<text x=\"%d\" y=\"16\" text-anchor=\"middle\" font-size=\"14\">",
		(int)(WIDTH / 2));
	esc(f, title);
	fprintf(f,
		"</text>\n<text class=\"fg-btn fg-reset\" x=\"10\" y=\"16\" display=\"none\">"
		"Reset zoom</text><text class=\"fg-btn fg-search\" x=\"%d\" y=\"16\" "
		"text-anchor=\"end\" display=\"none\">Search</text>\n"
		"<g class=\"fg-frames\" transform=\"translate(0,%d)\">\n",
		(int)WIDTH - 10, TOP);
	hidden = total ? draw(&d, &g->root, 0, 0) : 0;
	fprintf(f,
		"</g>\n<text class=\"fg-info\" x=\"0\" y=\"%d\"> </text>"
		"<text class=\"fg-match\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n"
		"<text class=\"fg-foot\" x=\"0\" y=\"%d\" font-size=\"10\">%llu %s; width = %s, "
		"callers below callees</text>\n<text class=\"fg-foot\" x=\"0\" y=\"%d\" "
		"font-size=\"10\">",
		height - BOTTOM + 14, (int)WIDTH, height - BOTTOM + 14, height - 16,
		(unsigned long long)total, g->unit, g->unit, height - 4);
	/* On a line of its own: the first one is as long as a narrow page allows. */
	if (g->folded)
		fprintf(f,
			"stacks over %d frames keep %d outer and %d inner ones, the middle folded%s",
			FOLD_DEPTH, FOLD_OUTER, FOLD_DEPTH - FOLD_OUTER - 1, hidden ? "; " : "");
	if (hidden)
		fprintf(f, "%llu frames too narrow to draw left out (with their callees)",
			(unsigned long long)hidden);
	fprintf(f, "</text>\n<script><![CDATA[%s]]></script>\n</svg>\n", flamegraph_js);
	return ferror(f) ? -EIO : 0;
}
