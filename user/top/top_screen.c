// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A frame as text (top_screen.h). Columns that never had values are left out; the names are
 * as wide as the longest (at least NAME_W) where the width allows, the text columns get the
 * rest; when the width is short the names narrow first (to NAME_W_MIN), then the text columns
 * go, then the numbers from the right, the sort column last. No line is longer than the width.
 */
#include <stdlib.h>
#include <string.h>
#include "top_family.h"
#include "top_screen.h"
#include "top_text.h"

#define ID_W	   7 /* a pid or tid: at most 4194304 */
#define NAME_W_MIN 8
#define NAME_W	   16 /* the names' width when they are all shorter */
#define HEAD_LINES 3  /* title, totals, column headings */

struct layout {
	int width;
	int name_w;
	int w[TOP_MAX_COLS]; /* each column's width, 0 when it is left out */
};

/* The width the frame's names want: the longest (a thread's is indented by one). */
static int names_w(const struct top_frame *fr)
{
	int w = NAME_W;

	for (size_t i = 0; i < fr->nrows; i++) {
		int n = (int)strlen(fr->rows[i].name) + !!fr->rows[i].tid;

		w = n > w ? n : w;
	}
	return w;
}

/* The widths of what fits in WIDTH, as the file's comment says. */
static void lay_out(const struct top_frame *fr, const struct top_view *v, int width,
		    struct layout *l)
{
	int fixed = ID_W, texts = 0, text_min = 0, avail, want = names_w(fr);

	memset(l, 0, sizeof(*l));
	l->width = width;
	for (__u32 c = 0; c < fr->ncols; c++) {
		if (!(fr->shown & (1u << c)))
			continue;
		l->w[c] = fr->cols[c].c->width;
		if (fr->cols[c].c->kind == TOP_LONGEST) {
			texts++;
			text_min += 1 + l->w[c];
		} else {
			fixed += 1 + l->w[c];
		}
	}
	/* Numbers that do not fit go, from the right, the sort column last. */
	for (int c = fr->ncols - 1; c > 0 && fixed + 1 + NAME_W_MIN > width; c--)
		if (l->w[c] && fr->cols[c].c->kind != TOP_LONGEST && (__u32)c != v->sort) {
			fixed -= 1 + l->w[c];
			l->w[c] = 0;
		}
	avail = width - fixed - 1;
	if (texts && avail - text_min < NAME_W_MIN) { /* no room for the text columns */
		for (__u32 c = 0; c < fr->ncols; c++)
			if (fr->cols[c].c->kind == TOP_LONGEST)
				l->w[c] = 0;
		texts = 0;
	}
	l->name_w = avail - (texts ? text_min : 0);
	l->name_w = l->name_w > want ? want : l->name_w < 1 ? 1 : l->name_w;
	if (!texts)
		return;
	/* The text columns share what is left. */
	avail -= l->name_w;
	for (__u32 c = 0, k = 0; c < fr->ncols; c++)
		if (l->w[c] && fr->cols[c].c->kind == TOP_LONGEST)
			l->w[c] = avail / texts - 1 + (++k == (__u32)texts ? avail % texts : 0);
}

/* 512B, 980K, 12.3M, 123M, 1.23G: bytes in 5 characters at most, units of 1024 (as htop). */
static void human_size(char *buf, size_t len, double x)
{
	static const char units[] = "BKMGTP";
	int u = 0;

	while (x >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%.0fB", x);
	else
		snprintf(buf, len,
			 x < 9.995   ? "%.2f%c"
			 : x < 99.95 ? "%.1f%c"
				     : "%.0f%c",
			 x, units[u]);
}

/* Column C's value X in W characters: "-" for nothing (CPU%, column 0, shows 0.0). */
static void cell_text(char *buf, size_t len, const struct top_col *col, int c, double x,
		      const char *label, int w)
{
	char d[16];
	int room;

	if (col->c->kind == TOP_TAG) {
		snprintf(buf, len, "%s", label ? label : "-");
	} else if (!x && c && !(col->c->kind == TOP_LONGEST && label)) {
		snprintf(buf, len, "-");
	} else if (col->c->kind == TOP_LONGEST && !x) {
		snprintf(buf, len, "%.*s", w > 0 ? w : 0, label); /* NOW: running, no duration */
	} else if (col->c->kind == TOP_LONGEST) {
		top_text__ns(d, sizeof(d), x);
		/* The name is cut at its end: the duration is what must show. */
		room = w - (int)strlen(d) - 1;
		snprintf(buf, len, "%.*s %s", room > 0 ? room : 0, label ? label : "?", d);
	} else if (col->c->kind == TOP_RATE) {
		top_text__rate(buf, len, x);
	} else if (col->c->kind == TOP_LEVEL) {
		human_size(buf, len, x);
	} else {
		snprintf(buf, len, x < 99.95 ? "%.1f" : "%.0f", x);
	}
}

/* Where a column goes: the tags beside the name (0), the numbers (1), the text columns (2). */
static int place(const struct top_col *c)
{
	return c->c->kind == TOP_TAG ? 0 : c->c->kind == TOP_LONGEST ? 2 : 1;
}

/* Column I of the screen's order (as lay_out sizes them). */
static __u32 screen_col(const struct top_frame *fr, __u32 i)
{
	for (int p = 0; p <= 2; p++)
		for (__u32 c = 0; c < fr->ncols; c++)
			if (place(&fr->cols[c]) == p && !i--)
				return c;
	return 0;
}

/* A row, or (R NULL) the headings. */
static void row_line(char *line, const struct top_frame *fr, const struct layout *l,
		     const struct top_row *r)
{
	char t[64];

	line[0] = 0;
	if (r)
		top_text__put(line, l->width, "%*u %s%-*.*s", ID_W, r->tid ? r->tid : r->pid,
			      r->tid ? " " : "", l->name_w - !!r->tid, l->name_w - !!r->tid,
			      r->name);
	else
		top_text__put(line, l->width, "%*s %-*s", ID_W, "ID", l->name_w, "NAME");
	for (__u32 i = 0; i < fr->ncols; i++) {
		__u32 c = screen_col(fr, i);

		if (!l->w[c])
			continue;
		if (r && r->tid && fr->cols[c].c->kind == TOP_TAG)
			t[0] = 0; /* a process's: blank in its threads' rows */
		else if (r)
			cell_text(t, sizeof(t), &fr->cols[c], c, r->val[c], r->label[c], l->w[c]);
		else
			snprintf(t, sizeof(t), "%s", fr->cols[c].c->head);
		if (place(&fr->cols[c]) != 1) /* text, left-aligned */
			top_text__put(line, l->width, " %-*.*s", l->w[c], l->w[c], t);
		else
			top_text__put(line, l->width, " %*.*s", l->w[c], l->w[c], t);
	}
}

/* How rows are sorted: highest first in the sort column, then by id, so rows keep places. */
struct sort_by {
	const struct top_frame *fr;
	__u32 col;
};

static int by_value(const void *a, const void *b, void *arg)
{
	const struct sort_by *s = arg;
	const struct top_row *x = &s->fr->rows[*(const size_t *)a],
			     *y = &s->fr->rows[*(const size_t *)b];

	if (x->val[s->col] != y->val[s->col])
		return x->val[s->col] < y->val[s->col] ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int visible(const struct top_row *r, const struct top_view *v)
{
	if (r->tid && !v->threads)
		return 0;
	return v->idle || !(r->flags & TOP_ROW_IDLE) || (!r->tid && (r->flags & TOP_ROW_TARGET));
}

/*
 * The rows in screen order: processes sorted, each followed by its threads sorted. Returns
 * a malloc'ed array of row indexes and its length in *N.
 */
static size_t *screen_order(const struct top_frame *fr, const struct top_view *v, size_t *n)
{
	size_t *procs = malloc((fr->nrows + 1) * sizeof(*procs)),
	       *out = malloc((fr->nrows + 1) * sizeof(*out)), np = 0, no = 0;
	struct sort_by by = { fr, v->sort < fr->ncols ? v->sort : 0 };

	*n = 0;
	if (!procs || !out) {
		free(procs);
		free(out);
		return NULL;
	}

	for (size_t i = 0; i < fr->nrows; i++)
		if (!fr->rows[i].tid && visible(&fr->rows[i], v))
			procs[np++] = i;
	qsort_r(procs, np, sizeof(*procs), by_value, &by);
	for (size_t p = 0; p < np; p++) {
		size_t first;

		out[no++] = procs[p];
		first = no;
		for (size_t i = 0; i < fr->nrows; i++)
			if (fr->rows[i].tid && fr->rows[i].pid == fr->rows[procs[p]].pid &&
			    visible(&fr->rows[i], v))
				out[no++] = i;
		qsort_r(out + first, no - first, sizeof(*out), by_value, &by);
	}
	free(procs);
	*n = no;
	return out;
}

static void title_lines(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
			int *n)
{
	char line[TOP_LINE_W_MAX + 1] = "", h[16];

	top_text__put(line, width, "top - %s", v->target);
	if (fr)
		top_text__put(line, width, " - sort %s",
			      fr->cols[v->sort < fr->ncols ? v->sort : 0].c->head);
	top_text__clock(line, width, v->interval_ns, v->live_ns);
	top_text__emit(out, line, n);
	line[0] = 0;
	if (fr) {
		top_text__rate(h, sizeof(h), fr->records_per_s);
		top_text__put(line, width, "%u process%s, %u thread%s, %s records/s, ", fr->nprocs,
			      fr->nprocs == 1 ? "" : "es", fr->nthreads,
			      fr->nthreads == 1 ? "" : "s", h);
		top_text__lost(line, width, fr);
	}
	top_text__emit(out, line, n);
}

static int help_screen(FILE *out, const struct top_frame *fr, int width, int height)
{
	static const char *const keys[] = {
		"q, Ctrl-C   quit",
		"< >         sort by the column left or right of the current one",
		"t           threads under their process, or processes only",
		"i           rows with nothing this interval too, or not",
		"f           functions: the CPU samples per function and line, as py-spy top",
		"w           where the time went: the interval's ledger of the job's critical thread",
		"h, ?        this help (any key goes back)",
	};
	int n = 0;

	top_text__lines(out, width, height, keys, sizeof(keys) / sizeof(keys[0]), &n);
	if (fr && (!height || n < height))
		top_text__emit(out, "", &n);
	for (__u32 c = 0; fr && c < fr->ncols; c++)
		top_text__col_help(out, width, height, fr->cols[c].c->head, fr->cols[c].c->key,
				   fr->cols[c].c->desc, &n);
	return n;
}

/*
 * The ledger view: the interval's lines of the job's critical unit, as the verdict words
 * them (stats' first lines, over this interval); each cut to the width.
 */
static int ledger_view(FILE *out, const struct top_frame *fr, const struct top_view *v, int width,
		       int height)
{
	char line[TOP_LINE_W_MAX + 1] = "";
	int n = 0;

	title_lines(out, fr, v, width, &n);
	top_text__put(line, width,
		      "Where the time went this interval (stats -r ledger: the "
		      "verdict's account):");
	top_text__emit(out, line, &n);
	if (!fr || !fr->ledger_cut || !fr->ledger_len) {
		line[0] = 0;
		top_text__put(line, width,
			      fr && fr->ledger_cut ? "  nothing to account yet (sched's timeline)"
						   : "  waiting for the first interval...");
		top_text__emit(out, line, &n);
	}
	for (const char *p = fr && fr->ledger ? fr->ledger : "";
	     *p && (!height || n < height - 1);) {
		size_t len = strcspn(p, "\n");

		line[0] = 0;
		top_text__put(line, width, "%.*s", (int)len, p);
		top_text__emit(out, line, &n);
		p += len + (p[len] == '\n');
	}
	if (v->keys)
		top_text__last_line(
			out, width, height,
			v->message[0] ? v->message : "q quit  w back to the rows  h help", &n);
	return n;
}

int top_screen__render(FILE *out, const struct top_frame *fr, const struct top_view *view,
		       int width, int height)
{
	char line[TOP_LINE_W_MAX + 1] = "";
	struct top_view vv = *view, *v = &vv;
	struct layout l;
	size_t *order, nrows = 0;
	int n = 0, room;

	if (v->functions)
		return top_fview__render(out, fr, v, width, height);
	if (v->ledger && !v->help)
		return ledger_view(out, fr, v, width > TOP_LINE_W_MAX ? TOP_LINE_W_MAX : width,
				   height);
	/* A sort column that is not shown (CPU% of a replay): the first one that is. */
	if (fr && !(fr->shown & (1u << v->sort)))
		v->sort = top_screen__next_col(fr, v->sort, 1);

	width = width > TOP_LINE_W_MAX ? TOP_LINE_W_MAX : width < 1 ? 1 : width;
	if (v->help)
		return help_screen(out, fr, width, height);
	title_lines(out, fr, v, width, &n);
	if (!fr) {
		top_text__put(line, width, "waiting for the first interval...");
		top_text__emit(out, line, &n);
		return n;
	}
	lay_out(fr, v, width, &l);
	row_line(line, fr, &l, NULL);
	top_text__emit(out, line, &n);
	order = screen_order(fr, v, &nrows);
	room = height ? height - HEAD_LINES - !!v->keys : (int)nrows;
	for (size_t i = 0; order && i < nrows && (int)i < room; i++) {
		row_line(line, fr, &l, &fr->rows[order[i]]);
		top_text__emit(out, line, &n);
	}
	free(order);
	if (!v->keys)
		return n;
	/* The keys on the last line, or the latest message. */
	top_text__last_line(
		out, width, height,
		v->message[0]
			? v->message
			: "q quit  < > sort  t threads  i idle rows  f functions  w where  h help",
		&n);
	return n;
}

__u32 top_screen__next_col(const struct top_frame *fr, __u32 col, int dir)
{
	__u32 i = 0;

	if (!(fr->shown & ((1u << fr->ncols) - 1)))
		return col;
	while (i < fr->ncols && screen_col(fr, i) != col)
		i++;
	do
		i = (i + fr->ncols + (dir < 0 ? -1 : 1)) % fr->ncols;
	while (!(fr->shown & (1u << screen_col(fr, i))));
	return screen_col(fr, i);
}

int top_screen__sort_col(const struct top_col *cols, __u32 n, const char *key)
{
	for (__u32 c = 0; c < n; c++)
		if (!strcmp(cols[c].c->key, key))
			return c;
	return -1;
}

void top_screen__keys(const struct top_col *cols, __u32 n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (__u32 c = 0; c < n && used < len; c++)
		used += snprintf(buf + used, len - used, "%s%s", c ? ", " : "", cols[c].c->key);
}
