// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Typed tables and their three printers; see table.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "table.h"
#include "utf8.h"

struct column {
	char *key;
	char *title;
	enum table_type type;
	int precision;
	unsigned flags; /* TABLE_COL_* */
};

struct table_cell {
	int set;
	union {
		__u64 u;
		__s64 s;
		double d;
		char *str;
	};
};

struct table {
	char *name;
	struct column *cols;
	int ncols;
	struct table_cell **rows; /* each row has ncols cells, allocated when the row starts */
	int nrows, rows_cap;
	char **notes; /* sentences under the human table */
	int nnotes;
	int err;
	int sort_col; /* table__sort's, for its comparison */
	__u64 origin; /* table__set_origin's */
};

void table__set_origin(struct table *t, __u64 mono_ns)
{
	t->origin = mono_ns;
}

__u64 table__origin(const struct table *t)
{
	return t->origin;
}

static int table__fail(struct table *t, int err)
{
	if (!t->err)
		t->err = err;
	return err;
}

struct table *table__new(const char *name)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->name = strdup(name ? name : "");
	if (!t->name) {
		free(t);
		return NULL;
	}
	return t;
}

void table__free(struct table *t)
{
	int r, c;

	if (!t)
		return;
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			if (t->cols[c].type == TABLE_STR && t->rows[r][c].set)
				free(t->rows[r][c].str);
		}
		free(t->rows[r]);
	}
	for (c = 0; c < t->ncols; c++) {
		free(t->cols[c].key);
		free(t->cols[c].title);
	}
	for (r = 0; r < t->nnotes; r++)
		free(t->notes[r]);
	free(t->notes);
	free(t->rows);
	free(t->cols);
	free(t->name);
	free(t);
}

int table__add_note(struct table *t, const char *fmt, ...)
{
	char **notes;
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return table__fail(t, -ENOMEM);
	notes = realloc(t->notes, (t->nnotes + 1) * sizeof(*notes));
	if (!notes) {
		free(s);
		return table__fail(t, -ENOMEM);
	}
	t->notes = notes;
	t->notes[t->nnotes++] = s;
	return 0;
}

int table__nnotes(const struct table *t)
{
	return t->nnotes;
}

const char *table__get_note(const struct table *t, int i)
{
	return i >= 0 && i < t->nnotes ? t->notes[i] : NULL;
}

#define TABLE_COL_FLAGS                                                                            \
	(TABLE_COL_PATH | TABLE_COL_MINOR | TABLE_COL_WEIGHT | TABLE_COL_TIMESTAMP |               \
	 TABLE_COL_IF_ANY)

/* 0 when T can take COL as its next column, else -EINVAL (nothing stuck: the caller says). */
static int table__check_col(const struct table *t, const struct table_col *col)
{
	if (!col->key || (unsigned)col->type > TABLE_STR || (col->flags & ~TABLE_COL_FLAGS) ||
	    col->precision < 0 || col->precision > 17)
		return -EINVAL;
	return table__col(t, col->key) >= 0 ? -EINVAL : 0;
}

/* Append COL, which the caller checked; its index. */
static int table__append(struct table *t, const struct table_col *col)
{
	struct column *nc, *c;

	/* Rows are sized by the column count when they start: columns come first. */
	if (t->nrows)
		return table__fail(t, -EINVAL);
	nc = realloc(t->cols, (t->ncols + 1) * sizeof(*nc));
	if (!nc)
		return table__fail(t, -ENOMEM);
	t->cols = nc;
	c = &t->cols[t->ncols];
	c->key = strdup(col->key);
	c->title = strdup(col->title ? col->title : col->key);
	if (!c->key || !c->title) {
		free(c->key);
		free(c->title);
		return table__fail(t, -ENOMEM);
	}
	c->type = col->type;
	c->precision = col->precision ? col->precision : TABLE_DEFAULT_PRECISION;
	c->flags = col->flags;
	return t->ncols++;
}

int table__add_col(struct table *t, const struct table_col *col)
{
	if (table__check_col(t, col))
		return table__fail(t, -EINVAL);
	return table__append(t, col);
}

/* A declared column goes in where its `when` is 0 or meets the options. */
static int col_taken(const struct table_col *col, unsigned on)
{
	return !col->when || (col->when & on);
}

/*
 * Both add calls: COLS[i] goes in where col_taken. Every entry is checked,
 * the left-out ones too, and every key against the others taken, before any goes in: a bad
 * declaration adds nothing.
 */
static int table__declare(struct table *t, const struct table_col *cols, int n, unsigned on,
			  int *idx)
{
	int i, j, at = 0, err;

	if (t->ncols || t->nrows || n <= 0)
		return table__fail(t, -EINVAL);
	for (i = 0; i < n; i++) {
		if (table__check_col(t, &cols[i]))
			return table__fail(t, -EINVAL);
		if (!col_taken(&cols[i], on))
			continue;
		for (j = 0; j < i; j++)
			if (col_taken(&cols[j], on) && !strcmp(cols[j].key, cols[i].key))
				return table__fail(t, -EINVAL);
	}
	for (i = 0; i < n; i++) {
		if (!col_taken(&cols[i], on)) {
			if (idx)
				idx[i] = -1;
			continue;
		}
		err = table__append(t, &cols[i]);
		if (err < 0)
			return err;
		if (idx)
			idx[i] = at;
		at++;
	}
	return 0;
}

int table__add_cols(struct table *t, const struct table_col *cols, int n)
{
	for (int i = 0; i < n; i++)
		if (cols[i].when)
			return table__fail(t, -EINVAL);
	return table__declare(t, cols, n, 0, NULL);
}

int table__add_cols_when(struct table *t, const struct table_col *cols, int n, unsigned on,
			 int *idx)
{
	return table__declare(t, cols, n, on, idx);
}

int table__row(struct table *t)
{
	struct table_cell **nr;
	int ncap;

	if (t->nrows == t->rows_cap) {
		ncap = t->rows_cap ? t->rows_cap * 2 : 16;
		nr = realloc(t->rows, ncap * sizeof(*nr));
		if (!nr)
			return table__fail(t, -ENOMEM);
		t->rows = nr;
		t->rows_cap = ncap;
	}
	t->rows[t->nrows] = calloc(t->ncols ? t->ncols : 1, sizeof(struct table_cell));
	if (!t->rows[t->nrows])
		return table__fail(t, -ENOMEM);
	t->nrows++;
	return 0;
}

/* The cell COL of the current row, if COL has type TYPE. */
static struct table_cell *table__cur(struct table *t, int col, enum table_type type)
{
	if (!t->nrows || col < 0 || col >= t->ncols || t->cols[col].type != type) {
		table__fail(t, -EINVAL);
		return NULL;
	}
	return &t->rows[t->nrows - 1][col];
}

int table__set_u64(struct table *t, int col, __u64 v)
{
	struct table_cell *c = table__cur(t, col, TABLE_U64);

	if (!c)
		return -EINVAL;
	c->u = v;
	c->set = 1;
	return 0;
}

int table__set_s64(struct table *t, int col, __s64 v)
{
	struct table_cell *c = table__cur(t, col, TABLE_S64);

	if (!c)
		return -EINVAL;
	c->s = v;
	c->set = 1;
	return 0;
}

int table__set_double(struct table *t, int col, double v)
{
	struct table_cell *c = table__cur(t, col, TABLE_DOUBLE);

	if (!c)
		return -EINVAL;
	c->d = v;
	c->set = 1;
	return 0;
}

int table__set_str(struct table *t, int col, const char *s)
{
	struct table_cell *c = table__cur(t, col, TABLE_STR);
	char *copy;

	if (!c)
		return -EINVAL;
	if (!s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return table__fail(t, -ENOMEM);
	if (c->set)
		free(c->str);
	c->str = copy;
	c->set = 1;
	return 0;
}

int table__err(const struct table *t)
{
	return t->err;
}

const char *table__name(const struct table *t)
{
	return t->name;
}

int table__ncols(const struct table *t)
{
	return t->ncols;
}

int table__nrows(const struct table *t)
{
	return t->nrows;
}

int table__col(const struct table *t, const char *key)
{
	int c;

	for (c = 0; c < t->ncols; c++) {
		if (strcmp(t->cols[c].key, key) == 0)
			return c;
	}
	return -ENOENT;
}

/*
 * NAME as a key: lower case, each run of other characters one '_', none at the ends; with
 * NO_UNIT, a unit in parentheses ("(ns)") or at the end of a key ("_ns", "_bytes", "_pct")
 * dropped: the human table's "CPU Total (ns)", its key cpu_total_ns and what users type,
 * cpu_total, meet as one.
 */
static void as_key(const char *name, int no_unit, char *out, size_t len)
{
	static const char *const units[] = { "_ns", "_us", "_ms", "_bytes", "_pct", "_s" };
	size_t n = 0, k;

	for (const char *c = name; *c && n + 1 < len; c++) {
		if (no_unit && *c == '(' && strchr(c, ')')) {
			c = strchr(c, ')');
			continue;
		}
		if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))
			out[n++] = *c;
		else if (*c >= 'A' && *c <= 'Z')
			out[n++] = (char)(*c - 'A' + 'a');
		else if (n && out[n - 1] != '_')
			out[n++] = '_';
	}
	while (n && out[n - 1] == '_')
		n--;
	out[n] = 0;
	for (size_t u = 0; no_unit && u < sizeof(units) / sizeof(units[0]); u++) {
		k = strlen(units[u]);
		if (n > k && !strcmp(out + n - k, units[u])) {
			out[n - k] = 0;
			break;
		}
	}
}

int table__col_named(const struct table *t, const char *name)
{
	char want[128], have[128];
	int c = table__col(t, name);

	if (c >= 0)
		return c;
	as_key(name, 0, want, sizeof(want));
	for (c = 0; c < t->ncols; c++) {
		as_key(t->cols[c].title ?: t->cols[c].key, 0, have, sizeof(have));
		if (!strcmp(have, want))
			return c;
	}
	as_key(name, 1, want, sizeof(want));
	for (c = 0; c < t->ncols; c++) {
		as_key(t->cols[c].title ?: t->cols[c].key, 1, have, sizeof(have));
		if (!strcmp(have, want))
			return c;
		as_key(t->cols[c].key, 1, have, sizeof(have));
		if (!strcmp(have, want))
			return c;
	}
	return -ENOENT;
}

static const struct table_cell *table__cell(const struct table *t, int row, int col,
					    enum table_type type)
{
	if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols || t->cols[col].type != type ||
	    !t->rows[row][col].set)
		return NULL;
	return &t->rows[row][col];
}

__u64 table__get_u64(const struct table *t, int row, int col)
{
	const struct table_cell *c = table__cell(t, row, col, TABLE_U64);

	return c ? c->u : 0;
}

__s64 table__get_s64(const struct table *t, int row, int col)
{
	const struct table_cell *c = table__cell(t, row, col, TABLE_S64);

	return c ? c->s : 0;
}

double table__get_double(const struct table *t, int row, int col)
{
	const struct table_cell *c = table__cell(t, row, col, TABLE_DOUBLE);

	return c ? c->d : 0;
}

const char *table__get_str(const struct table *t, int row, int col)
{
	const struct table_cell *c = table__cell(t, row, col, TABLE_STR);

	return c ? c->str : NULL;
}

double table__get_number(const struct table *t, int row, int col)
{
	if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols || !t->rows[row][col].set)
		return 0;
	switch (t->cols[col].type) {
	case TABLE_U64:
		return (double)t->rows[row][col].u;
	case TABLE_S64:
		return (double)t->rows[row][col].s;
	case TABLE_DOUBLE:
		return t->rows[row][col].d;
	default:
		return 0;
	}
}

int table__is_set(const struct table *t, int row, int col)
{
	return row >= 0 && row < t->nrows && col >= 0 && col < t->ncols && t->rows[row][col].set;
}

/* Text of a numeric cell into BUF ("" when unset); strings are printed from the cell. */
static const char *table__fmt(const struct table *t, int row, int col, char *buf, size_t len)
{
	const struct table_cell *c = &t->rows[row][col];
	const struct column *tc = &t->cols[col];

	buf[0] = 0;
	if (!c->set)
		return buf;
	switch (tc->type) {
	case TABLE_U64:
		snprintf(buf, len, "%llu", (unsigned long long)c->u);
		break;
	case TABLE_S64:
		snprintf(buf, len, "%lld", (long long)c->s);
		break;
	case TABLE_DOUBLE:
		snprintf(buf, len, "%.*f", tc->precision, c->d == 0 ? 0.0 : c->d);
		break;
	case TABLE_STR:
		return c->str;
	}
	return buf;
}

const char *table__cell_text(const struct table *t, int row, int col, char *buf, size_t len)
{
	if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols) {
		buf[0] = 0;
		return buf;
	}
	return table__fmt(t, row, col, buf, len);
}

const char *table__col_title(const struct table *t, int col)
{
	return col >= 0 && col < t->ncols ? t->cols[col].title : NULL;
}

const char *table__col_key(const struct table *t, int col)
{
	return col >= 0 && col < t->ncols ? t->cols[col].key : NULL;
}

unsigned table__col_flags(const struct table *t, int col)
{
	return col >= 0 && col < t->ncols ? t->cols[col].flags : 0;
}

int table__col_numeric(const struct table *t, int col)
{
	return col >= 0 && col < t->ncols && t->cols[col].type != TABLE_STR;
}

/* Display width of S: UTF-8 continuation bytes take no column. */
static int text_width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void put_padded(FILE *f, const char *s, int width, int right, int last)
{
	int pad = width - text_width(s);

	if (right)
		for (; pad > 0; pad--)
			fputc(' ', f);
	utf8__put_printable(f, s); /* a comm cannot break the layout, nor the terminal */
	if (!right && !last)
		for (; pad > 0; pad--)
			fputc(' ', f);
}

void table__print(const struct table *t, FILE *f)
{
	char buf[64];
	int *width, r, c, right, w;

	if (!t->ncols)
		return;
	width = calloc(t->ncols, sizeof(*width));
	if (!width)
		return;
	for (c = 0; c < t->ncols; c++) {
		width[c] = text_width(t->cols[c].title);
		for (r = 0; r < t->nrows; r++) {
			w = text_width(table__fmt(t, r, c, buf, sizeof(buf)));
			if (w > width[c])
				width[c] = w;
		}
	}
	/* nsys's layout: numbers right-aligned, text left-aligned, two spaces between columns. */
	for (c = 0; c < t->ncols; c++) {
		right = t->cols[c].type != TABLE_STR;
		fputs(c ? "  " : " ", f);
		put_padded(f, t->cols[c].title, width[c], right, c == t->ncols - 1);
	}
	fputc('\n', f);
	for (c = 0; c < t->ncols; c++) {
		fputs(c ? "  " : " ", f);
		for (w = 0; w < width[c]; w++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			right = t->cols[c].type != TABLE_STR;
			fputs(c ? "  " : " ", f);
			put_padded(f, table__fmt(t, r, c, buf, sizeof(buf)), width[c], right,
				   c == t->ncols - 1);
		}
		fputc('\n', f);
	}
	if (t->nnotes)
		fputc('\n', f);
	for (r = 0; r < t->nnotes; r++) {
		fputc(' ', f);
		utf8__put_printable(f, t->notes[r]);
		fputc('\n', f);
	}
	free(width);
}

/* RFC 4180: quote a field holding a comma, quote, CR or LF, and double its quotes. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void table__print_csv(const struct table *t, FILE *f)
{
	table__print_csv_rows(t, f, 0);
}

void table__print_csv_rows(const struct table *t, FILE *f, int max)
{
	char buf[64];
	int r, c, n = max > 0 && max < t->nrows ? max : t->nrows;

	for (c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', f);
		csv_field(f, t->cols[c].key);
	}
	fputc('\n', f);
	for (r = 0; r < n; r++) {
		for (c = 0; c < t->ncols; c++) {
			if (c)
				fputc(',', f);
			csv_field(f, table__fmt(t, r, c, buf, sizeof(buf)));
		}
		fputc('\n', f);
	}
}

void table__print_json(const struct table *t, struct json *j)
{
	table__print_json_rows(t, j, 0);
}

void table__print_json_rows(const struct table *t, struct json *j, int max)
{
	int r, c, n = max > 0 && max < t->nrows ? max : t->nrows;
	const struct table_cell *cell;
	const struct column *col;

	json__begin_array(j);
	for (r = 0; r < n; r++) {
		json__begin_object(j);
		for (c = 0; c < t->ncols; c++) {
			cell = &t->rows[r][c];
			col = &t->cols[c];
			json__key(j, col->key);
			if (!cell->set) {
				json__null(j);
				continue;
			}
			switch (col->type) {
			case TABLE_U64:
				json__u64(j, cell->u);
				break;
			case TABLE_S64:
				json__s64(j, cell->s);
				break;
			case TABLE_DOUBLE:
				json__double(j, cell->d, col->precision);
				break;
			case TABLE_STR:
				json__str(j, cell->str);
				break;
			}
		}
		json__end_object(j);
	}
	json__end_array(j);
}

/* table__sort's order of two rows: by the column, then as they were (a stable sort). */
struct sort_row {
	struct table_cell *cells;
	int at;
};

static int cell_cmp(const struct table_cell *a, const struct table_cell *b, enum table_type type)
{
	if (!a->set || !b->set)
		return b->set - a->set; /* unset last */
	switch (type) {
	case TABLE_U64:
		return (a->u < b->u) - (a->u > b->u);
	case TABLE_S64:
		return (a->s < b->s) - (a->s > b->s);
	case TABLE_DOUBLE:
		return (a->d < b->d) - (a->d > b->d);
	default:
		return strcmp(a->str ? a->str : "", b->str ? b->str : "");
	}
}

static int sort_row_cmp(const void *x, const void *y, void *arg)
{
	const struct sort_row *a = x, *b = y;
	const struct table *t = arg;
	int col = t->sort_col, c = cell_cmp(&a->cells[col], &b->cells[col], t->cols[col].type);

	return c ? c : a->at - b->at;
}

int table__sort(struct table *t, const char *key)
{
	int col = table__col_named(t, key);
	struct sort_row *v;

	if (col < 0)
		return col;
	v = malloc((t->nrows ? t->nrows : 1) * sizeof(*v));
	if (!v)
		return table__fail(t, -ENOMEM);
	for (int i = 0; i < t->nrows; i++)
		v[i] = (struct sort_row){ t->rows[i], i };
	t->sort_col = col;
	qsort_r(v, t->nrows, sizeof(*v), sort_row_cmp, t);
	for (int i = 0; i < t->nrows; i++)
		t->rows[i] = v[i].cells;
	free(v);
	return 0;
}
