// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Flame graphs of the CPU samples as SVG (flamegraph.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "flamegraph.h"
#include "records.h"
#include "stack_format.h"
#include "trace_model.h"

#define WIDTH		1200.0
#define ROW		17
#define MIN_PX		0.1 /* standalone (export --format svg): every frame a viewer can zoom to */
#define MIN_PX_EMBEDDED 0.5 /* in the report: bounded by its width, not by the stacks */
#define MAX_ROWS	256

struct node {
	char *name;
	int kind; /* BS_FRAME_*, STACK_FRAME_KERNEL, 0 for the root */
	__u64 count;
	struct node *child, *next;
};

struct flamegraph {
	struct node root;
	int depth;	  /* the deepest stack, in frames */
	const char *unit; /* what the counts are */
};

struct flamegraph *flamegraph__new(const char *unit)
{
	struct flamegraph *g = calloc(1, sizeof(*g));

	if (g)
		g->unit = unit;
	return g;
}

static void node_free(struct node *n)
{
	struct node *c, *next;

	for (c = n->child; c; c = next) {
		next = c->next;
		node_free(c);
		free(c->name);
		free(c);
	}
}

void flamegraph__free(struct flamegraph *g)
{
	if (!g)
		return;
	node_free(&g->root);
	free(g);
}

/* N's child NAME, made when new; children are kept sorted by name (flamegraph.pl's order). */
static struct node *child_of(struct node *n, const char *name, int kind)
{
	struct node **at = &n->child, *c;

	for (; *at && strcmp((*at)->name, name) < 0; at = &(*at)->next)
		;
	for (c = *at; c && !strcmp(c->name, name); c = c->next)
		if (c->kind == kind)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return NULL;
	}
	c->kind = kind;
	c->next = *at;
	*at = c;
	return c;
}

/* A frame as the graph names it: as the folded export does. */
static const char *frame_name(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	char fn[512];
	const char *func = stack_frame__func(f, m, fn, sizeof(fn));

	if (f->kind == BS_FRAME_PYTHON)
		snprintf(buf, len, "%s (%s:%u)", func, stack_frame__file(f, m), f->line);
	else
		snprintf(buf, len, "%s", func);
	return buf;
}

int flamegraph__add(struct flamegraph *g, const struct trace_stack *s, int kernel, __u64 count,
		    const struct trace_model *m)
{
	struct node *n = &g->root;
	char buf[1024];
	int depth = 0;

	n->count += count;
	if (!s || !s->nframes)
		n = child_of(n, "[no user stack]", BS_FRAME_CUT);
	else if (s->flags & BS_STACK_TRUNCATED)
		n = child_of(n, "[truncated]", BS_FRAME_CUT);
	if (n != &g->root && n) {
		n->count += count;
		depth++;
	}
	for (int i = s ? (int)s->nframes - 1 : -1; i >= 0 && n; i--, depth++) {
		n = child_of(n, frame_name(&s->frames[i], m, buf, sizeof(buf)), s->frames[i].kind);
		if (n)
			n->count += count;
	}
	if (kernel && n) {
		n = child_of(n, "[kernel]", STACK_FRAME_KERNEL);
		if (n)
			n->count += count;
		depth++;
	}
	if (depth > g->depth)
		g->depth = depth;
	return n ? 0 : -ENOMEM;
}

__u64 flamegraph__samples(const struct flamegraph *g)
{
	return g->root.count;
}

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
		snprintf(buf, len, "hsl(0,0%%,%u%%)", 70 + h % 10);
		break;
	case STACK_FRAME_KERNEL:
		snprintf(buf, len, "hsl(30,80%%,60%%)");
		break;
	default:
		snprintf(buf, len, "hsl(%u,80%%,%u%%)", h % 55, 55 + (h >> 8) % 15);
	}
}

/* Draw N's children from X (pixels) at row ROW (0 = the bottom); returns frames left out. */
static __u64 draw(FILE *f, const struct node *n, double x, int row, int rows, double scale,
		  __u64 total, double min_px, const char *unit)
{
	__u64 hidden = 0;
	char fill[48];

	for (const struct node *c = n->child; c; c = c->next) {
		double w = c->count * scale, y = (rows - row - 1) * ROW;

		if (w < min_px || row >= MAX_ROWS) {
			hidden++;
			continue;
		}
		colour(c, fill, sizeof(fill));
		fprintf(f, "<g><title>");
		esc(f, c->name);
		fprintf(f,
			" (%llu %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\"/>",
			(unsigned long long)c->count, unit, 100.0 * c->count / total, x, (int)y, w,
			ROW - 1, fill);
		if (w > 30) { /* text that fits: about 7 px a character */
			int chars = (int)(w / 7) - 1;

			fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 3, (int)y + ROW - 5);
			if ((int)strlen(c->name) <= chars) {
				esc(f, c->name);
			} else if (chars > 2) {
				char cut[512];

				snprintf(cut, sizeof(cut), "%.*s..", chars - 2, c->name);
				esc(f, cut);
			}
			fprintf(f, "</text>");
		}
		fprintf(f, "</g>\n");
		hidden += draw(f, c, x, row + 1, rows, scale, total, min_px, unit);
		x += w;
	}
	return hidden;
}

int flamegraph__svg(const struct flamegraph *g, FILE *f, const char *title, int standalone)
{
	int rows = (g->depth < MAX_ROWS ? g->depth : MAX_ROWS) + 1;
	int height = rows * ROW + 40;
	__u64 total = g->root.count, hidden;

	if (standalone)
		fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flame\" viewBox=\"0 0 %d %d\"%s"
		" font-family=\"monospace\" font-size=\"11\">\n",
		(int)WIDTH, height,
		standalone ? " width=\"1200\"" : " preserveAspectRatio=\"xMinYMin meet\"");
	if (standalone)
		fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
	fprintf(f, "<text x=\"%d\" y=\"16\" text-anchor=\"middle\" font-size=\"14\">",
		(int)(WIDTH / 2));
	esc(f, title);
	fprintf(f, "</text>\n<g transform=\"translate(0,24)\">\n");
	hidden = total ? draw(f, &g->root, 0, 0, rows - 1, WIDTH / total, total,
			      standalone ? MIN_PX : MIN_PX_EMBEDDED, g->unit)
		       : 0;
	fprintf(f,
		"</g>\n<text x=\"0\" y=\"%d\" font-size=\"10\">%llu %s; width = %s, "
		"callers below callees%s",
		height - 4, (unsigned long long)total, g->unit, g->unit,
		hidden ? "; frames too narrow to see (with their callees) not drawn: " : "");
	if (hidden)
		fprintf(f, "%llu", (unsigned long long)hidden);
	fprintf(f, "</text>\n</svg>\n");
	return ferror(f) ? -EIO : 0;
}
