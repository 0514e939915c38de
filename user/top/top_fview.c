// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's function view as text (f, --functions): py-spy top's columns over every traced
 * process's CPU samples. %Own and %Total are shares of the interval's samples (c: since the
 * start), OwnTime and TotalTime the on-CPU time since the start (r starts them over), as py-spy
 * top shows them; rows sorted by one of the four, highest first.
 */
#include <stdlib.h>
#include <string.h>
#include "top_screen.h"
#include "top_text.h"

#define PCT_W	   6
#define OWN_T_W	   8
#define TOTAL_T_W  9
#define FUNC_W_MIN 16 /* below it, the times go */

struct fcol {
	const char *key, *head, *desc;
};

/* The help screen's lines fit 80 columns: docs/USAGE.md says the rest. */
static const struct fcol fcols[TOP_FSORTS] = {
	[TOP_FSORT_OWN] = { "own", "%Own",
			    "samples it was the innermost frame of (Python's first)" },
	[TOP_FSORT_TOTAL] = { "total", "%Total", "samples it was on the stack of, once each" },
	[TOP_FSORT_OWN_TIME] = { "own-time", "OwnTime", "CPU time innermost, since the start (r)" },
	[TOP_FSORT_TOTAL_TIME] = { "total-time", "TotalTime",
				   "CPU time on the stack, since the start (r)" },
};

int top_fview__sort_key(const char *key)
{
	for (int k = 0; k < TOP_FSORTS; k++)
		if (!strcmp(fcols[k].key, key))
			return k;
	return -1;
}

const char *top_fview__keys(void)
{
	return "own, total, own-time, total-time";
}

/* The rows as the view reads them. */
struct fview {
	const struct top_funcs_frame *f;
	const struct top_view *v;
};

/* Row R's value in column K: a share (%), or ns. */
static double value(const struct fview *fv, const struct top_func *r, int k)
{
	__u64 n = fv->v->cumulative ? fv->f->samples_all : fv->f->samples;

	switch (k) {
	case TOP_FSORT_OWN:
		return n ? 100.0 * (fv->v->cumulative ? r->own_all : r->own) / n : 0;
	case TOP_FSORT_TOTAL:
		return n ? 100.0 * (fv->v->cumulative ? r->total_all : r->total) / n : 0;
	case TOP_FSORT_OWN_TIME:
		return (double)r->own_all * fv->f->period_ns;
	default:
		return (double)r->total_all * fv->f->period_ns;
	}
}

/*
 * Highest first; a tie by the other column of the same window (%Total for %Own, OwnTime for
 * TotalTime...), then by name: rows keep their places.
 */
static int by_value(const void *a, const void *b, void *arg)
{
	const struct fview *fv = arg;
	const struct top_func *x = a, *y = b;
	int k = fv->v->fsort;

	for (int i = 0; i < 2; i++, k ^= 1) {
		double vx = value(fv, x, k), vy = value(fv, y, k);

		if (vx != vy)
			return vx < vy ? 1 : -1;
	}
	return strcmp(x->text, y->text);
}

/* A row is shown when it was on a stack in the window its sort column reads. */
static int visible(const struct fview *fv, const struct top_func *r)
{
	int interval = fv->v->fsort <= TOP_FSORT_TOTAL && !fv->v->cumulative;

	return interval ? r->total > 0 : r->total_all > 0;
}

static void title_lines(FILE *out, const struct fview *fv, const struct top_frame *fr, int width,
			int *n)
{
	const struct top_view *v = fv->v;
	char line[TOP_LINE_W_MAX + 1] = "", h[16];

	top_text__put(line, width, "top - %s - functions by %s%s - sort %s", v->target,
		      v->by_func ? "function" : "line", v->cumulative ? ", since the start" : "",
		      fcols[v->fsort].head);
	top_text__clock(line, width, v->interval_ns, v->live_ns);
	top_text__emit(out, line, n);
	line[0] = 0;
	if (fr) {
		top_text__rate(h, sizeof(h),
			       fv->f->samples * 1e9 / (fr->span_ns ? fr->span_ns : 1));
		top_text__put(line, width, "%llu samples (%s/s), %llu since the start, ",
			      (unsigned long long)fv->f->samples, h,
			      (unsigned long long)fv->f->samples_all);
		if (fv->f->nostack)
			top_text__put(line, width, "%llu without a stack, ",
				      (unsigned long long)fv->f->nostack);
		top_text__lost(line, width, fr);
	}
	top_text__emit(out, line, n);
}

static int help_screen(FILE *out, int width, int height)
{
	static const char *const keys[] = {
		"Functions: the traced processes' CPU samples per line or function (py-spy top)",
		"q, Ctrl-C   quit",
		"1 2 3 4     sort by %Own, %Total, OwnTime, TotalTime (< > the next one)",
		"l           a row per line, or per function",
		"c           %Own and %Total of the last interval, or since the start",
		"r           start OwnTime, TotalTime (and c's shares) over",
		"f           back to the processes and threads",
		"h, ?        this help (any key goes back)",
		"",
	};
	int n = 0;

	top_text__lines(out, width, height, keys, sizeof(keys) / sizeof(keys[0]), &n);
	for (int k = 0; k < TOP_FSORTS; k++)
		top_text__col_help(out, width, height, fcols[k].head, fcols[k].key, fcols[k].desc,
				   &n);
	return n;
}

/* A row, or (R NULL) the headings; the times only when TIMES. */
static void row_line(char *line, int width, const struct fview *fv, const struct top_func *r,
		     int times)
{
	char c[TOP_FSORTS][16];

	line[0] = 0;
	if (!r) {
		top_text__put(line, width, "%*s %*s", PCT_W, fcols[0].head, PCT_W, fcols[1].head);
		if (times)
			top_text__put(line, width, " %*s %*s", OWN_T_W, fcols[2].head, TOTAL_T_W,
				      fcols[3].head);
		top_text__put(line, width, "  Function (file%s)", fv->v->by_func ? "" : ":line");
		return;
	}
	for (int k = 0; k < TOP_FSORTS; k++) {
		double x = value(fv, r, k);

		if (!x) /* nothing, as the process view says it */
			snprintf(c[k], sizeof(c[k]), "-");
		else if (k <= TOP_FSORT_TOTAL)
			snprintf(c[k], sizeof(c[k]), x < 99.95 ? "%.1f" : "%.0f", x);
		else
			top_text__ns(c[k], sizeof(c[k]), x);
	}
	top_text__put(line, width, "%*s %*s", PCT_W, c[0], PCT_W, c[1]);
	if (times)
		top_text__put(line, width, " %*s %*s", OWN_T_W, c[2], TOTAL_T_W, c[3]);
	top_text__put(line, width, "  %s", r->text);
}

/* The headings and the rows shown, sorted, as many as HEIGHT leaves room for (0: all). */
static void rows_lines(FILE *out, int width, int height, const struct fview *fv, int times, int *n)
{
	struct top_func *rows = malloc((fv->f->n + 1) * sizeof(*rows));
	char line[TOP_LINE_W_MAX + 1];
	size_t nrows = 0;

	row_line(line, width, fv, NULL, times);
	top_text__emit(out, line, n);
	for (size_t i = 0; rows && i < fv->f->n; i++)
		if (visible(fv, &fv->f->v[i]))
			rows[nrows++] = fv->f->v[i];
	if (rows)
		qsort_r(rows, nrows, sizeof(*rows), by_value, (void *)fv);
	for (size_t i = 0; i < nrows && (!height || *n < height - !!fv->v->keys); i++) {
		row_line(line, width, fv, &rows[i], times);
		top_text__emit(out, line, n);
	}
	free(rows);
}

int top_fview__render(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
		      int height)
{
	struct fview fv = { fr ? &fr->funcs[v->by_func ? TOP_FUNCS_BY_FUNC : TOP_FUNCS_BY_LINE]
			       : NULL,
			    v };
	char line[TOP_LINE_W_MAX + 1] = "";
	int n = 0, times = width - (2 * (PCT_W + 1) + OWN_T_W + TOTAL_T_W + 2) >= FUNC_W_MIN;

	width = width > TOP_LINE_W_MAX ? TOP_LINE_W_MAX : width < 1 ? 1 : width;
	if (v->help)
		return help_screen(out, width, height);
	title_lines(out, &fv, fr, width, &n);
	if (!fr || !fr->sampled) {
		top_text__put(line, width, "%s",
			      fr ? "no CPU samples yet" : "waiting for the first interval...");
		if (fr && v->funcs_hint)
			top_text__put(line, width, " (%s)", v->funcs_hint);
		top_text__emit(out, line, &n);
	} else if (!fr->funcs_cut) { /* f was pressed since this frame was cut */
		top_text__put(line, width, "functions from the next refresh...");
		top_text__emit(out, line, &n);
	} else {
		rows_lines(out, width, height, &fv, times, &n);
	}
	if (v->keys) /* the keys on the last line, or the latest message */
		top_text__last_line(out, width, height,
				    v->message[0] ? v->message
						  : "q quit  1-4 < > sort  l lines  c since start  "
						    "r reset  f processes  h help",
				    &n);
	return n;
}
