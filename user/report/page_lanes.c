// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A lane per busy thread on the report's page; see page_lanes.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "human.h"
#include "page.h"
#include "page_axis.h"
#include "page_lanes.h"
#include "trace_model.h"
#include "verdict.h"

struct run {
	__u64 a, b; /* [a, b) ns */
};

struct lane {
	__u64 busy;			/* ns, summed over the busy kinds */
	__u64 quantum[PAGE_LANE_KINDS]; /* spans closer than this are one (0: LANE_QUANTUM_NS) */
	struct run *runs[PAGE_LANE_KINDS];
	size_t n[PAGE_LANE_KINDS], cap[PAGE_LANE_KINDS];
};

struct top {
	__u32 pid, tid;
	__u64 busy;
	char name[128];
};

struct page_lanes {
	char kinds[PAGE_LANE_KINDS][32];
	int busy[PAGE_LANE_KINDS]; /* the kind counts as activity (waits in calls do not) */
	int nkinds;
	struct hmap *threads; /* {pid, tid} -> struct lane */
	struct top top[PAGE_LANES];
	int ntop;
};

struct page_lanes *page_lanes__new(void)
{
	struct page_lanes *l = calloc(1, sizeof(*l));

	if (l && !(l->threads = hmap__new(sizeof(struct lane)))) {
		free(l);
		return NULL;
	}
	return l;
}

void page_lanes__free(struct page_lanes *l)
{
	struct lane *ln;
	size_t it = 0;

	if (!l)
		return;
	while ((ln = hmap__next(l->threads, &it, NULL)))
		for (int k = 0; k < PAGE_LANE_KINDS; k++)
			free(ln->runs[k]);
	hmap__free(l->threads);
	free(l);
}

int page__lane_kind(const struct page *p, const char *name, int busy)
{
	struct page_lanes *l = p->lanes;

	if (!l)
		return -ENOENT;
	for (int k = 0; k < l->nkinds; k++)
		if (!strcmp(l->kinds[k], name))
			return k;
	if (l->nkinds == PAGE_LANE_KINDS)
		return -E2BIG;
	snprintf(l->kinds[l->nkinds], sizeof(l->kinds[0]), "%s", name);
	l->busy[l->nkinds] = busy;
	return l->nkinds++;
}

static int by_start(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	return x->a < y->a ? -1 : x->a > y->a;
}

/* Runs of KIND closer than twice its quantum made one, the quantum doubled: memory stays bounded. */
static void coarsen(struct lane *ln, int kind)
{
	struct run *r = ln->runs[kind];
	size_t n = 0;

	ln->quantum[kind] *= 2;
	qsort(r, ln->n[kind], sizeof(*r), by_start);
	for (size_t i = 0; i < ln->n[kind]; i++) {
		if (n && r[i].a <= r[n - 1].b + ln->quantum[kind]) {
			r[n - 1].b = r[i].b > r[n - 1].b ? r[i].b : r[n - 1].b;
			continue;
		}
		r[n++] = r[i];
	}
	ln->n[kind] = n;
}

int page__lane(const struct page *p, int kind, __u32 pid, __u32 tid, __u64 ts, __u64 dur)
{
	struct page_lanes *l = p->lanes;
	struct lane *ln;
	struct run *r;
	__u64 q;

	if (!l || kind < 0 || kind >= l->nkinds || !tid)
		return 0;
	ln = hmap__get(l->threads, (struct hkey){ pid, tid }, 1);
	if (!ln)
		return -ENOMEM;
	if (l->busy[kind])
		ln->busy += dur;
	if (!ln->quantum[kind])
		ln->quantum[kind] = LANE_QUANTUM_NS;
	if (ln->n[kind] == LANE_RUNS_MAX)
		coarsen(ln, kind);
	q = ln->quantum[kind];
	r = ln->n[kind] ? &ln->runs[kind][ln->n[kind] - 1] : NULL;
	if (r && ts <= r->b + q && ts + dur + q >= r->a) {
		r->a = ts < r->a ? ts : r->a;
		r->b = ts + dur > r->b ? ts + dur : r->b;
		return 0;
	}
	if (array__grow((void **)&ln->runs[kind], ln->n[kind], &ln->cap[kind], sizeof(*r)))
		return -ENOMEM;
	ln->runs[kind][ln->n[kind]++] = (struct run){ ts, ts + dur };
	return 0;
}

static int by_busy(const void *a, const void *b)
{
	const struct top *x = a, *y = b;

	if (x->busy != y->busy)
		return x->busy < y->busy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void page_lanes__named(struct page_lanes *l, const struct trace_model *m)
{
	struct top all[PAGE_LANES + 1];
	struct lane *ln;
	struct hkey key;
	size_t it = 0;
	int n = 0;

	/* The PAGE_LANES busiest, kept sorted in ALL: the new one in the spare slot. */
	while ((ln = hmap__next(l->threads, &it, &key))) {
		if (trace_model__own_thread(m, (__u32)key.b))
			continue; /* the tracer's thread in the job (a shim asleep in a call) */
		all[n] = (struct top){ (__u32)key.a, (__u32)key.b, ln->busy, "" };
		qsort(all, n + 1, sizeof(*all), by_busy);
		if (n < PAGE_LANES)
			n++;
	}
	for (int i = 0; i < n; i++)
		verdict__thread_in(m, all[i].pid, all[i].tid, all[i].name, sizeof(all[i].name));
	memcpy(l->top, all, n * sizeof(*all));
	l->ntop = n;
}

#define KIND_H 5 /* a kind's row in a lane */
#define NAME_H 13

/* A lane's runs of one kind, merged to the columns drawn, as one path. */
static void draw_runs(const struct page *p, struct lane *ln, int k, double y, FILE *f)
{
	double span = (double)(p->end - p->origin), col = span / LANE_COLUMNS, a = -1, b = -1;

	if (!ln->n[k] || span <= 0)
		return;
	/* Records come in the order they were written, not always by start. */
	qsort(ln->runs[k], ln->n[k], sizeof(*ln->runs[k]), by_start);
	fprintf(f, "<path class=\"k%d\" d=\"", k);
	for (size_t i = 0; i <= ln->n[k]; i++) {
		/* A span that began before the page's start is drawn from it (unsigned: no wrap). */
		double x0 = i < ln->n[k] ? (double)ln->runs[k][i].a - (double)p->origin : 0;
		double x1 = i < ln->n[k] ? (double)ln->runs[k][i].b - (double)p->origin : 0;

		x0 = x0 < 0 ? 0 : x0;
		x1 = x1 < 0 ? 0 : x1;

		if (i < ln->n[k] && a >= 0 && x0 <= b + col) {
			b = x1 > b ? x1 : b;
			continue;
		}
		if (a >= 0) {
			double w = (b - a) / span * PLOT_W;

			fprintf(f, "M%.2f %.0fh%.2fv%dh-%.2fz", PLOT_X + a / span * PLOT_W, y,
				w < 0.3 ? 0.3 : w, KIND_H - 1, w < 0.3 ? 0.3 : w);
		}
		a = x0;
		b = x1;
	}
	fprintf(f, "\"/>");
}

/* The row of each kind that some lane drawn has (-1: none has it), and how many rows. */
static int kind_rows(const struct page_lanes *l, int *row)
{
	int rows = 0;

	for (int k = 0; k < l->nkinds; k++) {
		row[k] = -1;
		for (int i = 0; i < l->ntop && row[k] < 0; i++) {
			const struct lane *ln = hmap__get(
				l->threads, (struct hkey){ l->top[i].pid, l->top[i].tid }, 0);

			if (ln && ln->n[k])
				row[k] = rows++;
		}
	}
	return rows;
}

void page_lanes__draw(const struct page *p, struct page_lanes *l, FILE *f)
{
	int row[PAGE_LANE_KINDS], rows = kind_rows(l, row);
	int lane_h = NAME_H + KIND_H * rows + 4, h;
	char busy[32];

	if (!l->ntop || !rows) {
		page__no_data(f, "tl-threads", "Threads",
			      "no thread's spans recorded (on a CPU, in calls, waiting)");
		return;
	}
	h = lane_h * l->ntop;
	fprintf(f,
		"<figure class=\"timeline\" id=\"tl-threads\"><figcaption>Threads <span "
		"class=\"what\">the %d busiest (time on a CPU, in CUDA calls, torch ops and GIL "
		"waits: system calls are mostly waits), each row one kind"
		"</span></figcaption>\n",
		l->ntop);
	page_axis__open(f, p, h, 0, NULL);
	for (int i = 0; i < l->ntop; i++) {
		struct lane *ln =
			hmap__get(l->threads, (struct hkey){ l->top[i].pid, l->top[i].tid }, 0);
		double y = PLOT_Y + (double)i * lane_h;

		fprintf(f, "<g class=\"lane\" data-tid=\"%u\" data-pid=\"%u\">", l->top[i].tid,
			l->top[i].pid);
		for (int k = 0; ln && k < l->nkinds; k++)
			if (row[k] >= 0)
				draw_runs(p, ln, k, y + NAME_H + row[k] * KIND_H, f);
		fprintf(f, "</g>\n");
	}
	page_axis__close_plot(f);
	/* The names over their lanes, outside the zoomed plot: they stay put. */
	for (int i = 0; i < l->ntop; i++) {
		fprintf(f, "<text class=\"lane-name\" x=\"%d\" y=\"%d\">", PLOT_X + 2,
			PLOT_Y + i * lane_h + NAME_H - 3);
		page__esc(f, l->top[i].name);
		fprintf(f, " · %s</text>\n", human__ns((double)l->top[i].busy, busy, sizeof(busy)));
	}
	fprintf(f, "</svg>\n<ul class=\"legend\">");
	for (int k = 0; k < l->nkinds; k++) {
		if (row[k] < 0)
			continue;
		fprintf(f, "<li class=\"s%d\">", k);
		page__esc(f, l->kinds[k]);
		fprintf(f, "</li>");
	}
	fprintf(f, "</ul></figure>\n");
}
