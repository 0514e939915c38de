// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A table as people read it: units, rows, width; see table_view.h. */
#include <stdlib.h>
#include <string.h>
#include "human.h"
#include "table.h"
#include "table_view.h"
#include "utf8.h"

#define MIN_TEXT     10 /* a name is cut below this many columns (or its title's) last */
#define COMFORT_TEXT 40 /* nor below this before minor columns are left out */

enum unit { UNIT_NONE, UNIT_NS, UNIT_BYTES, UNIT_TS };

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

static enum unit col_unit(const struct table *t, int col)
{
	const char *key = table__col_key(t, col);

	if (!table__col_numeric(t, col))
		return UNIT_NONE;
	if (table__col_flags(t, col) & TABLE_COL_TIMESTAMP)
		return UNIT_TS;
	if (ends_with(key, "_ns"))
		return UNIT_NS;
	if (!strcmp(key, "bytes") || ends_with(key, "_bytes"))
		return UNIT_BYTES;
	return UNIT_NONE;
}

static double cell_value(const struct table *t, int row, int col)
{
	return table__get_number(t, row, col);
}

/* S with control characters and invalid UTF-8 as '?' (utf8.h): a comm cannot break the layout. */
static const char *printable(const char *s, char *buf, size_t len)
{
	if (utf8__is_printable(s))
		return s;
	snprintf(buf, len, "%s", s);
	return utf8__printable(buf);
}

/* An instant from the table's origin ("+8.75 s"); the raw ns when the table has none. */
static const char *from_origin(const struct table *t, double ts, char *buf, size_t len)
{
	double origin = (double)table__origin(t);
	char d[32];

	if (!origin) {
		snprintf(buf, len, "%.0f", ts);
		return buf;
	}
	human__ns(ts >= origin ? ts - origin : origin - ts, d, sizeof(d));
	snprintf(buf, len, "%c%s", ts >= origin ? '+' : '-', d);
	return buf;
}

const char *table__view_cell(const struct table *t, int row, int col, const struct table_view *v,
			     char *buf, size_t len)
{
	const char *s = table__cell_text(t, row, col, buf, len);
	enum unit u = col_unit(t, col);

	if (!table__is_set(t, row, col))
		return "";
	if (!v->raw && u == UNIT_NS)
		return human__ns(cell_value(t, row, col), buf, len);
	if (!v->raw && u == UNIT_TS)
		return from_origin(t, cell_value(t, row, col), buf, len);
	if (!v->raw && u == UNIT_BYTES)
		return human__bytes(cell_value(t, row, col), buf, len);
	if (table__col_numeric(t, col))
		return s;
	if (!v->wide && (table__col_flags(t, col) & TABLE_COL_PATH))
		s = human__base(s);
	return s == buf ? s : printable(s, buf, len);
}

/* A row whose weight columns (if the table has any) are all 0 or unset shows nothing. */
static int row_empty(const struct table *t, int row)
{
	int c, weights = 0;

	for (c = 0; c < table__ncols(t); c++) {
		if (!(table__col_flags(t, c) & TABLE_COL_WEIGHT))
			continue;
		weights = 1;
		if (table__is_set(t, row, c) && cell_value(t, row, c) != 0)
			return 0;
	}
	return weights;
}

struct vcol {
	char title[2][64]; /* one line, or two when split to fit */
	int width, nat, minw, shown, right;
	int cellw; /* the widest cell's */
	int zero;  /* a TABLE_COL_IF_ANY column 0 on every row: not shown, said once */
};

struct view {
	const struct table *t;
	const struct table_view *v;
	struct vcol *cols;
	int ncols;
	int *rows, nrows; /* the rows shown */
	char **cells;	  /* nrows x ncols texts */
	int more, empty;  /* rows past --top, rows with nothing in them */
};

const char *table__view_unit(const struct table *t, int col)
{
	enum unit u = col_unit(t, col);

	return u == UNIT_NS ? "ns" : u == UNIT_BYTES ? "B" : NULL;
}

/* The title for people: durations and sizes say their unit in every cell. */
const char *table__view_title(const struct table *t, int col, const struct table_view *v, char *buf,
			      size_t len)
{
	const char *title = table__col_title(t, col);
	enum unit u = col_unit(t, col);
	size_t n = strlen(title);

	if (!v->raw && (u == UNIT_NS || u == UNIT_TS) && ends_with(title, " (ns)"))
		n -= 5;
	else if (!v->raw && u == UNIT_BYTES && ends_with(title, " (B)"))
		n -= 4;
	snprintf(buf, len, "%.*s", (int)n, title);
	return buf;
}

static void view_title(struct view *w, int c)
{
	table__view_title(w->t, c, w->v, w->cols[c].title[0], sizeof(w->cols[c].title[0]));
	w->cols[c].title[1][0] = 0;
}

/* Column C is 0, empty or unset on every row of T. */
static int all_zero(const struct table *t, int c)
{
	char buf[8];

	for (int r = 0; r < table__nrows(t); r++) {
		if (!table__is_set(t, r, c))
			continue;
		if (table__col_numeric(t, c) ? table__get_number(t, r, c) != 0
					     : *table__cell_text(t, r, c, buf, sizeof(buf)))
			return 0;
	}
	return 1;
}

int table__view_hides(const struct table *t, int col, const struct table_view *v)
{
	return !v->wide && (table__col_flags(t, col) & TABLE_COL_IF_ANY) && table__nrows(t) &&
	       all_zero(t, col);
}

static int view_fill(struct view *w)
{
	char buf[4096];
	int r, c, n = 0, i;

	w->rows = calloc(table__nrows(w->t) + 1, sizeof(*w->rows));
	w->cols = calloc(w->ncols + 1, sizeof(*w->cols));
	if (!w->rows || !w->cols)
		return -1;
	for (r = 0; r < table__nrows(w->t); r++) {
		if (row_empty(w->t, r))
			w->empty++;
		else if (w->v->top > 0 && n >= w->v->top)
			w->more++;
		else
			w->rows[n++] = r;
	}
	w->nrows = n;
	w->cells = calloc((size_t)n * w->ncols + 1, sizeof(*w->cells));
	if (!w->cells)
		return -1;
	for (c = 0; c < w->ncols; c++) {
		view_title(w, c);
		w->cols[c].zero = table__view_hides(w->t, c, w->v);
		w->cols[c].shown = !w->cols[c].zero;
		w->cols[c].right = table__col_numeric(w->t, c);
		w->cols[c].width = human__width(w->cols[c].title[0]);
		w->cols[c].minw = w->cols[c].width > MIN_TEXT ? w->cols[c].width : MIN_TEXT;
		for (i = 0; i < n; i++) {
			char **cell = &w->cells[(size_t)i * w->ncols + c];
			int cw;

			*cell = strdup(
				table__view_cell(w->t, w->rows[i], c, w->v, buf, sizeof(buf)));
			if (!*cell)
				return -1;
			cw = human__width(*cell);
			if (cw > w->cols[c].width)
				w->cols[c].width = cw;
			if (cw > w->cols[c].cellw)
				w->cols[c].cellw = cw;
		}
		if (w->cols[c].minw > w->cols[c].width)
			w->cols[c].minw = w->cols[c].width;
		w->cols[c].nat = w->cols[c].width;
	}
	return 0;
}

static int view_total(const struct view *w)
{
	int c, total = 1, n = 0;

	for (c = 0; c < w->ncols; c++) {
		if (!w->cols[c].shown)
			continue;
		total += w->cols[c].width + (n ? 2 : 0);
		n++;
	}
	return total;
}

/* Names at their natural width, then narrower, the widest first, down to FLOOR (or less). */
static void fit_text(struct view *w, int width, int floor)
{
	int c, widest, lo;

	for (c = 0; c < w->ncols; c++)
		if (!w->cols[c].right)
			w->cols[c].width = w->cols[c].nat;
	while (view_total(w) > width) {
		widest = -1;
		for (c = 0; c < w->ncols; c++) {
			lo = w->cols[c].minw > floor ? w->cols[c].minw : floor;
			if (w->cols[c].shown && !w->cols[c].right && w->cols[c].width > lo &&
			    (widest < 0 || w->cols[c].width > w->cols[widest].width))
				widest = c;
		}
		if (widest < 0)
			return;
		w->cols[widest].width--;
	}
}

/* A title wider than its column's cells goes on two lines, split at its best space. */
static void split_titles(struct view *w)
{
	int c, best, bw, k, n, a, cw;
	char *title;

	for (c = 0; c < w->ncols; c++) {
		title = w->cols[c].title[0];
		cw = w->cols[c].cellw > 1 ? w->cols[c].cellw : 1;
		n = (int)strlen(title);
		if (human__width(title) <= cw)
			continue;
		best = -1;
		bw = human__width(title);
		for (k = 1; k < n - 1; k++) {
			if (title[k] != ' ')
				continue;
			title[k] = 0;
			a = human__width(title);
			if (human__width(title + k + 1) > a)
				a = human__width(title + k + 1);
			title[k] = ' ';
			if (a < bw) {
				bw = a;
				best = k;
			}
		}
		if (best < 0)
			continue;
		snprintf(w->cols[c].title[1], sizeof(w->cols[c].title[1]), "%s", title + best + 1);
		title[best] = 0;
		w->cols[c].nat = w->cols[c].width = bw > cw ? bw : cw;
		if (w->cols[c].minw > w->cols[c].width)
			w->cols[c].minw = w->cols[c].width;
	}
}

/* Drop the rightmost column that PASS allows: minor ones, then any number, then any name. */
static int drop_one(struct view *w, int pass)
{
	unsigned flags;
	int c;

	for (c = w->ncols - 1; c > 0; c--) {
		if (!w->cols[c].shown)
			continue;
		flags = table__col_flags(w->t, c);
		if ((pass == 0 && (flags & TABLE_COL_MINOR)) || (pass == 1 && w->cols[c].right) ||
		    pass == 2) {
			w->cols[c].shown = 0;
			return 1;
		}
	}
	return 0;
}

static int fits(struct view *w, int width, int floor)
{
	fit_text(w, width, floor);
	return view_total(w) <= width;
}

/*
 * Names keep COMFORT_TEXT columns while titles go on two lines and minor columns are left
 * out; then MIN_TEXT while other numbers go, then other names; then whatever fits.
 */
static void view_fit(struct view *w, int width)
{
	if (fits(w, width, COMFORT_TEXT))
		return;
	split_titles(w);
	if (fits(w, width, COMFORT_TEXT))
		return;
	while (drop_one(w, 0))
		if (fits(w, width, COMFORT_TEXT))
			return;
	if (fits(w, width, MIN_TEXT))
		return;
	while (drop_one(w, 1))
		if (fits(w, width, MIN_TEXT))
			return;
	while (drop_one(w, 2))
		if (fits(w, width, MIN_TEXT))
			return;
	fits(w, width, 1);
	/* A narrow terminal: names go below their minimum rather than past the edge. */
	for (int c = 0; c < w->ncols; c++)
		w->cols[c].minw = 1;
	fit_text(w, width, 1);
}

static void put_cell(FILE *f, const char *s, int width, int right, int last)
{
	char buf[4096];
	int pad;

	s = human__shorten(s, width, buf, sizeof(buf));
	pad = width - human__width(s);
	if (right)
		fprintf(f, "%*s", pad > 0 ? pad : 0, "");
	fputs(s, f);
	if (!right && !last)
		fprintf(f, "%*s", pad > 0 ? pad : 0, "");
}

static int last_shown(const struct view *w)
{
	int c, last = -1;

	for (c = 0; c < w->ncols; c++)
		if (w->cols[c].shown)
			last = c;
	return last;
}

/* LINE (LEN bytes, no newline) without the spaces padding its end, then a newline. */
static void put_line(FILE *f, const char *line, size_t len)
{
	while (len && line[len - 1] == ' ')
		len--;
	fwrite(line, 1, len, f);
	fputc('\n', f);
}

static void print_header(const struct view *w, FILE *f)
{
	int c, line, first, two = 0, last = last_shown(w);
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	for (c = 0; c < w->ncols; c++)
		two |= w->cols[c].shown && w->cols[c].title[1][0];
	/* Two lines: a one-line title on the lower, next to the split titles' ends. */
	for (line = two ? 0 : 1; line < 2; line++) {
		m = open_memstream(&buf, &len);
		if (!m)
			return;
		for (c = 0, first = 1; c < w->ncols; c++) {
			const struct vcol *vc = &w->cols[c];
			const char *s = vc->title[1][0] ? vc->title[line]
					: line		? vc->title[0]
							: "";

			if (!vc->shown)
				continue;
			fputs(first ? " " : "  ", m);
			put_cell(m, s, vc->width, vc->right, c == last);
			first = 0;
		}
		fclose(m);
		put_line(f, buf, len);
		free(buf);
		buf = NULL;
	}
	for (c = 0, first = 1; c < w->ncols; c++) {
		if (!w->cols[c].shown)
			continue;
		fputs(first ? " " : "  ", f);
		for (line = 0; line < w->cols[c].width; line++)
			fputc('-', f);
		first = 0;
	}
	fputc('\n', f);
}

/* Below the table: what it does not show, and how to see it. */
static void print_notes(const struct view *w, int width, FILE *f)
{
	char note[1024];
	size_t used = 0;
	int c, n = 0;

	note[0] = 0;
	for (int i = 0; i < table__nnotes(w->t); i++) {
		fputs(" ", f);
		human__wrap(f, table__get_note(w->t, i), width, 1, 1);
	}
	if (w->more && used < sizeof(note))
		used += snprintf(note + used, sizeof(note) - used,
				 "%s%d more row%s (--top 0 shows all).", used ? " " : "", w->more,
				 w->more == 1 ? "" : "s");
	if (w->empty && used < sizeof(note))
		used += snprintf(note + used, sizeof(note) - used,
				 "%s%d row%s with nothing in %s not shown.", used ? " " : "",
				 w->empty, w->empty == 1 ? "" : "s", w->empty == 1 ? "it" : "them");
	for (c = 0; c < w->ncols && used < sizeof(note); c++) {
		if (w->cols[c].shown || w->cols[c].zero)
			continue;
		used += snprintf(note + used, sizeof(note) - used, "%s%s%s%s",
				 n++	? ", "
				 : used ? " Left out to fit: "
					: "Left out to fit: ",
				 w->cols[c].title[0], w->cols[c].title[1][0] ? " " : "",
				 w->cols[c].title[1]);
	}
	if (n && used < sizeof(note))
		used += snprintf(note + used, sizeof(note) - used, " (--wide shows them).");
	for (c = 0, n = 0; c < w->ncols && used < sizeof(note); c++) {
		if (!w->cols[c].zero)
			continue;
		used += snprintf(note + used, sizeof(note) - used, "%s%s%s%s",
				 n++	? ", "
				 : used ? " 0 on every row, not shown: "
					: "0 on every row, not shown: ",
				 w->cols[c].title[0], w->cols[c].title[1][0] ? " " : "",
				 w->cols[c].title[1]);
	}
	if (n && used < sizeof(note))
		used += snprintf(note + used, sizeof(note) - used, " (--wide shows them).");
	if (used) {
		fputs(" ", f);
		human__wrap(f, note, width, 1, 1);
	}
}

static void view_free(struct view *w)
{
	size_t i;

	for (i = 0; w->cells && i < (size_t)w->nrows * w->ncols; i++)
		free(w->cells[i]);
	free(w->cells);
	free(w->rows);
	free(w->cols);
}

void table__print_view(const struct table *t, const struct table_view *v, FILE *f)
{
	struct view w = { .t = t, .v = v, .ncols = table__ncols(t) };
	int width = v->wide ? 0 : v->width, i, c, first, last;

	if (!w.ncols)
		return;
	if (view_fill(&w)) {
		view_free(&w);
		table__print(t, f); /* out of memory: at least the rows */
		return;
	}
	if (width > 0)
		view_fit(&w, width);
	last = last_shown(&w);
	print_header(&w, f);
	for (i = 0; i < w.nrows; i++) {
		for (c = 0, first = 1; c < w.ncols; c++) {
			if (!w.cols[c].shown)
				continue;
			fputs(first ? " " : "  ", f);
			put_cell(f, w.cells[(size_t)i * w.ncols + c], w.cols[c].width,
				 w.cols[c].right, c == last);
			first = 0;
		}
		fputc('\n', f);
	}
	print_notes(&w, width, f);
	view_free(&w);
}
