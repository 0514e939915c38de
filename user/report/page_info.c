// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* info's text as tables: see page_info.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "page.h"
#include "page_info.h"

#define MAX_COLS 32

/* Lines of info's text: starts and lengths, no newline. */
struct lines {
	const char **s;
	int *len, n;
};

static int split_lines(const char *text, struct lines *l)
{
	int cap = 1;

	for (const char *p = text; *p; p++)
		cap += *p == '\n';
	l->s = calloc(cap, sizeof(*l->s));
	l->len = calloc(cap, sizeof(*l->len));
	l->n = 0;
	if (!l->s || !l->len)
		return -1;
	for (const char *p = text; *p;) {
		int n = (int)strcspn(p, "\n");

		l->s[l->n] = p;
		l->len[l->n++] = n;
		p += n + (p[n] == '\n');
	}
	return 0;
}

/* A table's header underline: " ---  -------  ---": only spaces and dashes, some dashes. */
static int underline(const char *s, int n)
{
	int dashes = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] == '-')
			dashes++;
		else if (s[i] != ' ')
			return 0;
	}
	return dashes > 0;
}

/* The columns an underline marks: each run of dashes starts one. */
static int columns(const char *s, int n, int *start)
{
	int k = 0;

	for (int i = 0; i < n && k < MAX_COLS; i++)
		if (s[i] == '-' && (!i || s[i - 1] == ' '))
			start[k++] = i;
	return k;
}

/* S[A, B) without its spaces around, into BUF (LEN > 0). */
static const char *trimmed(const char *s, int n, int a, int b, char *buf, int size)
{
	int len;

	if (a > n)
		a = n;
	if (b > n)
		b = n;
	while (a < b && s[a] == ' ')
		a++;
	while (b > a && s[b - 1] == ' ')
		b--;
	len = b - a < size - 1 ? b - a : size - 1;
	memcpy(buf, s + a, len);
	buf[len] = 0;
	return buf;
}

/* S[A, B) without its spaces around, escaped. */
static void cell(FILE *f, const char *s, int n, int a, int b)
{
	char buf[1024];

	page__esc(f, trimmed(s, n, a, b, buf, sizeof(buf)));
}

static int numeric(const char *s, int n, int a, int b)
{
	int digits = 0;

	for (int i = a; i < b && i < n; i++) {
		if (isdigit((unsigned char)s[i]))
			digits++;
		else if (s[i] != ' ' && s[i] != '.')
			return 0;
	}
	return digits > 0;
}

/* Line R of a table cut at its K columns' starts, each cell a TAG. */
static void row(FILE *f, const struct lines *l, int r, const char *tag, const int *start, int k,
		const int *num)
{
	char buf[1024];
	const char *text;

	fprintf(f, "<tr>");
	for (int c = 0; c < k; c++) {
		text = trimmed(l->s[r], l->len[r], start[c], c + 1 < k ? start[c + 1] : l->len[r],
			       buf, sizeof(buf));
		fprintf(f, "<%s%s>", tag, page__cell_class(num[c], text));
		page__esc(f, text);
		fprintf(f, "</%s>", tag);
	}
	fprintf(f, "</tr>\n");
}

/* Line R is a row of the table underlined by line U: blank wherever U is between columns. */
static int is_row(const struct lines *l, int r, int u)
{
	if (!l->len[r] || l->s[r][0] != ' ')
		return 0;
	for (int i = 0; i < l->len[r] && i < l->len[u]; i++)
		if (l->s[u][i] == ' ' && l->s[r][i] != ' ')
			return 0;
	return 1;
}

/*
 * The table whose header is line H (underlined by H + 1): its rows are the indented lines that
 * keep its columns; the indented lines after them are its notes (what the table left out).
 */
static int table(FILE *f, const struct lines *l, int h)
{
	int start[MAX_COLS + 1] = {}, num[MAX_COLS] = {}, k, end, r;

	k = columns(l->s[h + 1], l->len[h + 1], start);
	for (end = h + 2; end < l->n && is_row(l, end, h + 1); end++)
		;
	for (int c = 0; c < k; c++) {
		num[c] = end > h + 2;
		for (r = h + 2; r < end; r++)
			num[c] &= numeric(l->s[r], l->len[r], start[c],
					  c + 1 < k ? start[c + 1] : l->len[r]);
	}
	fprintf(f, "<div class=\"scroll\"><table class=\"info\"><thead>");
	row(f, l, h, "th", start, k, num);
	fprintf(f, "</thead><tbody>\n");
	for (r = h + 2; r < end; r++)
		row(f, l, r, "td", start, k, num);
	fprintf(f, "</tbody></table></div>\n");
	for (; end < l->n && l->len[end] && l->s[end][0] == ' '; end++) {
		fprintf(f, "<p class=\"rows\">");
		cell(f, l->s[end], l->len[end], 0, l->len[end]);
		fprintf(f, "</p>\n");
	}
	return end;
}

/* "key:   value" or "  name   value": a row, the key (its colon left out) and the rest. */
static void pair(FILE *f, const char *s, int n)
{
	int indent = 0, key, gap;

	while (indent < n && s[indent] == ' ')
		indent++;
	/* The key ends at its colon (a top line) or at the first run of two spaces. */
	for (key = indent; key < n; key++)
		if ((!indent && s[key] == ':') ||
		    (indent && key + 1 < n && s[key] == ' ' && s[key + 1] == ' '))
			break;
	gap = key;
	if (gap < n && s[gap] == ':')
		gap++;
	fprintf(f, "<tr%s><th>", indent ? " class=\"sub\"" : "");
	cell(f, s, n, indent, key > indent && s[key - 1] == ':' ? key - 1 : key);
	fprintf(f, "</th><td>");
	cell(f, s, n, gap, n);
	fprintf(f, "</td></tr>\n");
}

void page_info__write(FILE *f, const char *text)
{
	struct lines l = {};
	int i = 0, open = 0;

	fprintf(f, "<section id=\"info\"><h2>Recording</h2>\n<details><summary>The recording's "
		   "details (<code>bpfsight info</code>): host, command, events by type, losses, "
		   "the processes' Python and CUPTI</summary>\n");
	if (split_lines(text ? text : "", &l)) {
		fprintf(f, "<pre>");
		page__esc(f, text);
		fprintf(f, "</pre>");
		l.n = 0;
	}
	while (i < l.n) {
		if (!l.len[i]) {
			i++;
			continue;
		}
		if (i + 2 < l.n && underline(l.s[i + 2], l.len[i + 2]) && l.s[i + 1][0] == ' ') {
			/* "python: per process (...)", then its table. */
			if (!open)
				fprintf(f, "<table class=\"kv\">\n");
			pair(f, l.s[i], l.len[i]);
			fprintf(f, "</table>\n");
			open = 0;
			i = table(f, &l, i + 1);
			continue;
		}
		if (!open)
			fprintf(f, "<table class=\"kv\">\n");
		open = 1;
		pair(f, l.s[i], l.len[i]);
		i++;
	}
	if (open)
		fprintf(f, "</table>\n");
	fprintf(f, "</details></section>\n");
	free(l.s);
	free(l.len);
}
