// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight report's HTML page (report_html.h): the timelines are summed in time bins
 * (time_bins.c, gil_contention.c: the exports' counters) during one walk of the trace, then
 * drawn as SVG; the tables are the stats reports' own (stats.c), cut to their top rows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "cpu_samples.h"
#include "flamegraph.h"
#include "gil_contention.h"
#include "gpu_decode.h"
#include "records.h"
#include "report_html.h"
#include "stats.h"
#include "table.h"
#include "time_bins.h"
#include "trace_walk.h"

#define MAX_GPUS 64

struct series {
	char label[96];
	const struct time_bins *bins;
	double total; /* ns summed: which series to draw when there are too many */
};

struct loss_mark {
	__u64 ts, count;
};

struct timelines {
	__u64 origin, end; /* the recording's start and end (CLOCK_MONOTONIC ns) */
	struct time_bins gpu[MAX_GPUS];
	__u32 gpu_dev[MAX_GPUS], ngpu, gpu_dropped;
	struct gil_contention *gil;
	char (*gil_names)[32]; /* each GIL process's name, in gil_contention__next's order */
	struct time_bins blocked, preempted, syscalls;
	struct loss_mark *loss;
	size_t nloss, loss_cap;
	__u64 lost;
	struct cpu_samples *samples;  /* cpu family: counted per stack while walking */
	struct flamegraph *flame;     /* then drawn from them, while the trace's names are known */
	struct flamegraph *gil_flame; /* the GIL holders' code, by the waits it caused (us) */
};

static int add_gpu(struct timelines *tl, const struct bs_hdr *rec)
{
	struct gpu_op op;
	__u32 i;

	if (!gpu_op__read(rec, &op))
		return 0;
	for (i = 0; i < tl->ngpu && tl->gpu_dev[i] != op.device; i++)
		;
	if (i == tl->ngpu) {
		if (i == MAX_GPUS) {
			tl->gpu_dropped++;
			return 0;
		}
		tl->gpu_dev[i] = op.device;
		time_bins__init(&tl->gpu[i], tl->origin, REPORT_BIN_NS);
		tl->ngpu++;
	}
	return time_bins__add(&tl->gpu[i], op.ts, op.dur);
}

static int add_loss(struct timelines *tl, const struct bs_loss *l)
{
	if (tl->nloss == tl->loss_cap) {
		size_t cap = tl->loss_cap ? 2 * tl->loss_cap : 64;
		struct loss_mark *n = realloc(tl->loss, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tl->loss = n;
		tl->loss_cap = cap;
	}
	tl->loss[tl->nloss++] = (struct loss_mark){ l->h.ts, l->count };
	tl->lost += l->count;
	return 0;
}

static int add_record(struct timelines *tl, const struct bs_hdr *rec)
{
	switch (rec->type) {
	case BS_REC_SYSCALL:
		return time_bins__add(&tl->syscalls, rec->ts,
				      ((const struct bs_syscall *)rec)->dur);
	case BS_REC_OFFCPU: {
		const struct bs_offcpu *o = (const void *)rec;

		return time_bins__add(o->state ? &tl->blocked : &tl->preempted, rec->ts, o->dur);
	}
	case BS_REC_LOSS:
		return add_loss(tl, (const void *)rec);
	default:
		break;
	}
	if (gil_contention__add(tl->gil, rec, tl->origin))
		return -ENOMEM;
	return add_gpu(tl, rec);
}

/* --stacks=gil: a round of a wait, as wide as it lasted, under the holder's code. */
static int add_gil_holder(struct timelines *tl, const struct bs_hdr *rec,
			  const struct trace_model *m)
{
	const struct trace_stack *s;

	if (rec->type != BS_REC_GIL_HOLDER || rec->size < sizeof(struct bs_gil_holder))
		return 0;
	s = trace_model__event_stack(m, rec);
	if (!s)
		return 0;
	return flamegraph__add(tl->gil_flame, s, 0,
			       ((const struct bs_gil_holder *)rec)->dur / 1000 ?: 1, m);
}

static void timelines_free(struct timelines *tl)
{
	for (__u32 i = 0; i < tl->ngpu; i++)
		time_bins__free(&tl->gpu[i]);
	gil_contention__free(tl->gil);
	free(tl->gil_names);
	time_bins__free(&tl->blocked);
	time_bins__free(&tl->preempted);
	time_bins__free(&tl->syscalls);
	free(tl->loss);
	cpu_samples__free(tl->samples);
	flamegraph__free(tl->flame);
	flamegraph__free(tl->gil_flame);
}

static int collect(struct timelines *tl, const char *path)
{
	const struct rec_decoder *dec;
	const struct trace_status *st;
	const struct bs_hdr *rec;
	struct trace_walk w;
	int ret, status;

	if (trace_walk__open(&w, "report", path))
		return EXIT_READ_FAIL;
	tl->origin = trace_walk__meta(&w)->start.mono_ns;
	tl->gil = gil_contention__new(REPORT_BIN_NS);
	tl->samples = cpu_samples__new();
	tl->flame = flamegraph__new("samples");
	tl->gil_flame = flamegraph__new("us of GIL waits");
	if (!tl->gil || !tl->samples || !tl->flame || !tl->gil_flame) {
		trace_walk__close(&w);
		fprintf(stderr, "bpfsight report: %s\n", strerror(ENOMEM));
		return EXIT_READ_FAIL;
	}
	time_bins__init(&tl->blocked, tl->origin, REPORT_BIN_NS);
	time_bins__init(&tl->preempted, tl->origin, REPORT_BIN_NS);
	time_bins__init(&tl->syscalls, tl->origin, REPORT_BIN_NS);
	while ((ret = trace_walk__next(&w, &rec, &dec))) {
		if (ret == 1 && (add_record(tl, rec) || cpu_samples__add(tl->samples, rec) ||
				 add_gil_holder(tl, rec, w.m))) {
			trace_walk__close(&w);
			fprintf(stderr, "bpfsight report: %s\n", strerror(ENOMEM));
			return EXIT_READ_FAIL;
		}
	}
	status = trace_walk__finish(&w);
	/* The names while the model is here: the legend says "pid 42 (python3)". */
	{
		size_t it = 0;
		__u32 stack_id;
		int kernel;
		__u64 n;

		while (cpu_samples__next(tl->samples, &it, &stack_id, &kernel, &n))
			if (flamegraph__add(tl->flame, trace_model__stack(w.m, stack_id), kernel, n,
					    w.m))
				break;
	}
	{
		size_t it = 0, n = 0;
		__u32 pid;

		while (gil_contention__next(tl->gil, &it, &pid))
			n++;
		tl->gil_names = calloc(n ? n : 1, sizeof(*tl->gil_names));
		for (it = 0, n = 0; tl->gil_names && gil_contention__next(tl->gil, &it, &pid); n++)
			snprintf(tl->gil_names[n], sizeof(tl->gil_names[n]), "%s",
				 trace_model__process_name(w.m, pid) ?: "");
	}
	st = trace_walk__status(&w);
	tl->end = st->has_end ? st->end.mono_ns : st->last_ts;
	if (tl->end < tl->origin)
		tl->end = tl->origin;
	trace_walk__close(&w);
	return status;
}

static void esc(FILE *f, const char *s)
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

/* "1.5 s", "250 ms": an axis label. */
static void fmt_secs(char *buf, size_t len, double s)
{
	if (s >= 100)
		snprintf(buf, len, "%.0f s", s);
	else if (s >= 1 || s == 0)
		snprintf(buf, len, "%.3g s", s);
	else
		snprintf(buf, len, "%.3g ms", s * 1e3);
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
	const struct series *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->label, y->label);
}

#define SVG_W  960
#define SVG_H  150
#define PLOT_X 60 /* left margin: the value labels */
#define PLOT_W (SVG_W - PLOT_X - 10)
#define PLOT_Y 10
#define PLOT_H (SVG_H - PLOT_Y - 30)

static void axis(FILE *f, const struct timelines *tl, double ymax, const char *unit)
{
	double secs = (double)(tl->end - tl->origin) / 1e9;
	char buf[32];

	fprintf(f, "<g class=\"axis\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", PLOT_X,
		PLOT_Y + PLOT_H, PLOT_X + PLOT_W, PLOT_Y + PLOT_H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", PLOT_X, PLOT_Y, PLOT_X,
		PLOT_Y + PLOT_H);
	for (int t = 0; t <= 4; t++) {
		fmt_secs(buf, sizeof(buf), secs * t / 4);
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>",
			PLOT_X + PLOT_W * t / 4, SVG_H - 8,
			t == 0	 ? "start"
			: t == 4 ? "end"
				 : "middle",
			buf);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.*f%s</text>", PLOT_X - 4,
		PLOT_Y + 10, ymax >= 100 ? 0 : 2, ymax, unit);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text></g>\n", PLOT_X - 4,
		PLOT_Y + PLOT_H);
}

/*
 * One timeline: every series a step line of at most REPORT_COLUMNS points over the whole
 * recording, on one y scale (0 .. the largest column, or CAP when given).
 */
static void chart(FILE *f, const struct timelines *tl, const char *id, const char *title,
		  const char *what, struct series *s, int n, double cap, const char *unit)
{
	__u32 bins = (__u32)((tl->end - tl->origin + REPORT_BIN_NS - 1) / REPORT_BIN_NS);
	__u32 cols, shown;
	double ymax = cap, v;

	if (bins > TIME_BINS_MAX)
		bins = TIME_BINS_MAX;
	if (!bins)
		bins = 1;
	cols = bins < REPORT_COLUMNS ? bins : REPORT_COLUMNS;
	qsort(s, n, sizeof(*s), by_total);
	shown = n < REPORT_SERIES ? n : REPORT_SERIES;
	if (ymax <= 0) {
		for (__u32 k = 0; k < shown; k++)
			for (__u32 c = 0; c < cols; c++) {
				v = column(s[k].bins, (__u64)c * bins / cols,
					   (__u64)(c + 1) * bins / cols, 0);
				ymax = v > ymax ? v : ymax;
			}
	}
	if (ymax <= 0)
		ymax = 1;
	fprintf(f, "<figure class=\"timeline\" id=\"%s\"><figcaption>", id);
	esc(f, title);
	fprintf(f, " <span class=\"what\">");
	esc(f, what);
	fprintf(f,
		"</span></figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		"viewBox=\"0 0 "
		"%d %d\" role=\"img\">\n",
		SVG_W, SVG_H);
	axis(f, tl, ymax, unit);
	for (__u32 k = 0; k < shown; k++) {
		fprintf(f, "<polyline class=\"s%u\" points=\"", k);
		for (__u32 c = 0; c < cols; c++) {
			v = column(s[k].bins, (__u64)c * bins / cols, (__u64)(c + 1) * bins / cols,
				   cap);
			double y = PLOT_Y + PLOT_H - (v / ymax) * PLOT_H;

			fprintf(f, "%.1f,%.1f %.1f,%.1f ", PLOT_X + (double)PLOT_W * c / cols, y,
				PLOT_X + (double)PLOT_W * (c + 1) / cols, y);
		}
		fprintf(f, "\"><title>");
		esc(f, s[k].label);
		fprintf(f, "</title></polyline>\n");
	}
	fprintf(f, "</svg>\n<ul class=\"legend\">");
	for (__u32 k = 0; k < shown; k++) {
		fprintf(f, "<li class=\"s%u\">", k);
		esc(f, s[k].label);
		fprintf(f, "</li>");
	}
	if ((__u32)n > shown)
		fprintf(f, "<li class=\"more\">and %u more, smaller</li>", n - shown);
	fprintf(f, "</ul></figure>\n");
}

static double total(const struct time_bins *b)
{
	double ns = 0;

	for (__u32 i = 0; i < time_bins__used(b); i++)
		ns += time_bins__ns(b, i);
	return ns;
}

static void no_data(FILE *f, const char *id, const char *title, const char *why)
{
	fprintf(f, "<figure class=\"timeline empty\" id=\"%s\"><figcaption>", id);
	esc(f, title);
	fprintf(f, "</figcaption><p>");
	esc(f, why);
	fprintf(f, "</p></figure>\n");
}

static void loss_chart(FILE *f, const struct timelines *tl)
{
	__u64 span = tl->end - tl->origin ? tl->end - tl->origin : 1, max = 0;
	__u64 cols[REPORT_COLUMNS] = {};

	if (!tl->lost) {
		no_data(f, "tl-loss", "Loss", "no event was lost");
		return;
	}
	for (size_t i = 0; i < tl->nloss; i++) {
		__u64 off = tl->loss[i].ts > tl->origin ? tl->loss[i].ts - tl->origin : 0;
		__u64 c = off >= span ? REPORT_COLUMNS - 1 : off * REPORT_COLUMNS / span;

		cols[c] += tl->loss[i].count;
		max = cols[c] > max ? cols[c] : max;
	}
	fprintf(f,
		"<figure class=\"timeline\" id=\"tl-loss\"><figcaption>Loss <span "
		"class=\"what\">events lost, %llu in all (bpfsight info: by cause)</span>"
		"</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
		"role=\"img\">\n",
		(unsigned long long)tl->lost, SVG_W, SVG_H);
	axis(f, tl, (double)max, "");
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
	fprintf(f, "</svg></figure>\n");
}

static void timelines_html(FILE *f, const struct timelines *tl)
{
	struct series s[MAX_GPUS > 3 ? MAX_GPUS : 3];
	const struct time_bins *b;
	size_t it = 0;
	__u32 pid;
	int n = 0;

	fprintf(f, "<section id=\"timelines\"><h2>Timelines</h2>\n");
	for (__u32 i = 0; i < tl->ngpu; i++) {
		snprintf(s[n].label, sizeof(s[n].label), "GPU %u", tl->gpu_dev[i]);
		s[n].bins = &tl->gpu[i];
		s[n++].total = total(&tl->gpu[i]);
	}
	if (n)
		chart(f, tl, "tl-gpu", "GPU busy",
		      "per device: share of time with a kernel, copy or memset running", s, n, 1.0,
		      "");
	else
		no_data(f, "tl-gpu", "GPU busy", "no GPU operation recorded (gpu family)");

	/* GIL contention: the processes that waited most, by total wait. */
	{
		struct series *g = NULL;
		int ng = 0, cap = 0;

		while ((b = gil_contention__next(tl->gil, &it, &pid))) {
			if (ng == cap) {
				struct series *t =
					realloc(g, (cap = cap ? 2 * cap : 8) * sizeof(*g));

				if (!t)
					break;
				g = t;
			}
			if (tl->gil_names && tl->gil_names[ng][0])
				snprintf(g[ng].label, sizeof(g[ng].label), "pid %u (%s)", pid,
					 tl->gil_names[ng]);
			else
				snprintf(g[ng].label, sizeof(g[ng].label), "pid %u", pid);
			g[ng].bins = b;
			g[ng++].total = total(b);
		}
		if (ng)
			chart(f, tl, "tl-gil", "GIL contention",
			      "per process: threads waiting for the GIL (waits of at least the "
			      "recording's threshold)",
			      g, ng, 0, "");
		else
			no_data(f, "tl-gil", "GIL contention", "no GIL wait recorded (gil family)");
		free(g);
	}

	n = 0;
	if (time_bins__used(&tl->blocked) || time_bins__used(&tl->preempted)) {
		snprintf(s[n].label, sizeof(s[n].label), "blocked (slept)");
		s[n].bins = &tl->blocked;
		s[n++].total = total(&tl->blocked);
		snprintf(s[n].label, sizeof(s[n].label), "preempted (runnable)");
		s[n].bins = &tl->preempted;
		s[n++].total = total(&tl->preempted);
		chart(f, tl, "tl-offcpu", "Off-CPU", "traced threads off the CPU, by state", s, n,
		      0, "");
	} else {
		no_data(f, "tl-offcpu", "Off-CPU", "no off-CPU interval recorded (sched family)");
	}

	if (time_bins__used(&tl->syscalls)) {
		snprintf(s[0].label, sizeof(s[0].label), "in system calls");
		s[0].bins = &tl->syscalls;
		s[0].total = total(&tl->syscalls);
		chart(f, tl, "tl-syscall", "System calls",
		      "threads inside a recorded system call (calls of at least --osrt-threshold)",
		      s, 1, 0, "");
	} else {
		no_data(f, "tl-syscall", "System calls", "no system call recorded (osrt family)");
	}
	loss_chart(f, tl);
	fprintf(f, "</section>\n");
}

static void table_html(FILE *f, const struct table *t)
{
	int rows = table__nrows(t), cols = table__ncols(t), shown;
	char buf[64];

	shown = rows < REPORT_ROWS ? rows : REPORT_ROWS;
	fprintf(f,
		"<div class=\"report\" id=\"r-%s\"><h3>%s</h3>\n<div class=\"scroll\"><table>"
		"<thead><tr>",
		table__name(t), table__name(t));
	for (int c = 0; c < cols; c++) {
		fprintf(f, "<th%s>", table__col_numeric(t, c) ? " class=\"n\"" : "");
		esc(f, table__col_title(t, c));
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead><tbody>\n");
	for (int r = 0; r < shown; r++) {
		fprintf(f, "<tr>");
		for (int c = 0; c < cols; c++) {
			fprintf(f, "<td%s>", table__col_numeric(t, c) ? " class=\"n\"" : "");
			esc(f, table__cell_text(t, r, c, buf, sizeof(buf)));
			fprintf(f, "</td>");
		}
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody></table></div>\n<p class=\"rows\">%d of %d rows%s</p></div>\n", shown,
		rows, rows > shown ? " (the first, in the report's order)" : "");
}

static void reports_html(FILE *f, const struct stats *st, int *shown)
{
	char names[1024], *tok, *save = NULL;
	const struct table *t;

	stats__list_reports(names, sizeof(names));
	fprintf(f, "<section id=\"reports\"><h2>Reports</h2>\n");
	for (tok = strtok_r(names, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		t = stats__table(st, tok);
		if (!t || !table__nrows(t))
			continue;
		table_html(f, t);
		(*shown)++;
	}
	if (!*shown)
		fprintf(f, "<p>No report has rows.</p>\n");
	fprintf(f, "</section>\n");
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
	"overflow:auto;font:12px/1.4 ui-monospace,monospace}\n"
	"figure{margin:14px 0;background:var(--card);border:1px solid var(--line);"
	"border-radius:6px;padding:8px 12px}figcaption{font-weight:600}\n"
	"svg{width:100%;height:auto;display:block}.axis line{stroke:var(--line)}"
	".axis text{fill:var(--mute);font-size:11px}\n"
	"polyline{fill:none;stroke-width:1.5}rect.loss{fill:var(--c1)}\n"
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
	"th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;"
	"white-space:nowrap}th{position:sticky;top:0;background:var(--card)}.n{text-align:right}\n"
	"footer{margin-top:28px;font-size:12px;border-top:1px solid var(--line);padding-top:8px}\n";

int report_html__write(const struct report_input *in, FILE *f)
{
	struct timelines tl = {};
	int status, reports = 0;

	status = collect(&tl, in->path);
	if (status == EXIT_READ_FAIL) {
		timelines_free(&tl);
		return status;
	}
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		   "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
		   "<title>bpfsight report: ");
	esc(f, in->path);
	fprintf(f,
		"</title>\n<style>\n%s</style></head>\n<body>\n<header><h1>bpfsight report</h1>"
		"<p class=\"sub\">",
		style);
	esc(f, in->path);
	fprintf(f, "</p></header>\n<section id=\"info\"><h2>Recording</h2>\n<pre>");
	esc(f, in->info_text);
	fprintf(f, "</pre></section>\n");
	timelines_html(f, &tl);
	if (flamegraph__samples(tl.flame)) {
		fprintf(f, "<section id=\"flame\"><h2>CPU samples</h2>\n<div class=\"scroll\">");
		flamegraph__svg(tl.flame, f, "CPU samples (flame graph)", 0);
		fprintf(f, "</div></section>\n");
	}
	if (flamegraph__samples(tl.gil_flame)) {
		fprintf(f, "<section id=\"gil-flame\"><h2>GIL waits by the holder's code</h2>\n"
			   "<div class=\"scroll\">");
		flamegraph__svg(
			tl.gil_flame, f,
			"What held the GIL while others waited (the holders' Python frames)", 0);
		fprintf(f, "</div></section>\n");
	}
	reports_html(f, in->stats, &reports);
	fprintf(f, "<footer>Summarized by bpfsight ");
	esc(f, in->version);
	fprintf(f,
		": the whole recording (%.3f s) in %llu ms bins, at most %d points per line and "
		"%d lines per timeline (the largest), the first %d rows of each of the %d "
		"reports with rows%s. The full data: <code>bpfsight stats</code>, "
		"<code>bpfsight export</code>.</footer>\n</body></html>\n",
		(double)(tl.end - tl.origin) / 1e9, REPORT_BIN_NS / 1000000, REPORT_COLUMNS,
		REPORT_SERIES, REPORT_ROWS, reports,
		tl.gpu_dropped ? "; GPU operations of devices past the 64th are not drawn" : "");
	timelines_free(&tl);
	return status;
}
