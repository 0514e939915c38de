// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The exposition's series as one interval's rows (monitor_intervals.h). A series' line is
 * NAME{LABELS} VALUE or NAME VALUE; the last `# TYPE FAMILY KIND` before it says whether it is
 * cumulative (a counter; a histogram's _bucket, _sum and _count; a summary's _sum and _count).
 * Its labels' values are escaped as JSON's strings are (\\, \", \n), so they go into the
 * row's args as they are: {"value":V,"type":"counter","labels":{"pid":"12",...}}.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "monitor_intervals.h"

struct monitor_series {
	char *key; /* NAME{LABELS}, as the exposition writes it */
	double value;
	__u32 missing; /* intervals taken since the exposition last had it */
};

static int series_cmp(const void *a, const void *b)
{
	return strcmp(((const struct monitor_series *)a)->key,
		      ((const struct monitor_series *)b)->key);
}

static void series_free(struct monitor_series *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

/* S (N bytes) as a TabSeparated field: ClickHouse's escapes for the bytes that would end it. */
static void tsv(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\')
			fputs("\\\\", f);
		else if (s[i] == '\t')
			fputs("\\t", f);
		else if (s[i] == '\n')
			fputs("\\n", f);
		else
			fputc(s[i], f);
	}
}

/* Is series NAME cumulative, in the family FAM of kind KIND (the last # TYPE)? */
static int cumulative(const char *name, size_t n, const char *fam, const char *kind)
{
	size_t fl = strlen(fam);
	const char *sfx = name + fl;

	if (n < fl || strncmp(name, fam, fl))
		return 0;
	if (n == fl)
		return !strcmp(kind, "counter");
	if (!strcmp(kind, "histogram") && !strncmp(sfx, "_bucket", n - fl) && n - fl == 7)
		return 1;
	return (!strcmp(kind, "histogram") || !strcmp(kind, "summary")) &&
	       ((n - fl == 4 && !strncmp(sfx, "_sum", 4)) ||
		(n - fl == 6 && !strncmp(sfx, "_count", 6)));
}

/* The pid label's value among LABELS (LEN bytes): the row's pid (0: none, or "other"). */
static unsigned long label_pid(const char *l, size_t len)
{
	for (size_t i = 0; i + 5 <= len; i++)
		if ((!i || l[i - 1] == ',') && !strncmp(l + i, "pid=\"", 5))
			return strtoul(l + i + 5, NULL, 10);
	return 0;
}

/* LABELS (between the braces, LEN bytes) as JSON's members into F. */
static void labels_json(FILE *f, const char *l, size_t len)
{
	const char *end = l + len;
	int first = 1;

	while (l < end) {
		const char *eq = memchr(l, '=', (size_t)(end - l)), *v, *q;

		if (!eq || eq + 1 >= end || eq[1] != '"')
			return;
		v = eq + 2;
		for (q = v; q < end && *q != '"'; q++)
			q += *q == '\\';
		if (q >= end)
			return;
		fprintf(f, "%s\"", first ? "" : ",");
		tsv(f, l, (size_t)(eq - l));
		fputs("\":\"", f);
		tsv(f, v, (size_t)(q - v));
		fputc('"', f);
		first = 0;
		l = q + 1;
		l += l < end && *l == ',';
	}
}

/* The base's value of counter KEY (0: it was not there). */
static double base_of(const struct monitor_intervals *mi, char *key)
{
	struct monitor_series k = { .key = key }, *b;

	b = mi->nbase ? bsearch(&k, mi->base, mi->nbase, sizeof(k), series_cmp) : NULL;
	return b ? b->value : 0;
}

long monitor_intervals__write(struct monitor_intervals *mi, const char *text, __u64 end_ns,
			      const char *file_id, FILE *f)
{
	char fam[256] = "", kind[32] = "";
	struct monitor_series *v = NULL;
	size_t n = 0, cap = 0;
	long rows = 0;

	for (const char *line = text, *eol; *line; line = *eol ? eol + 1 : eol) {
		const char *name_end, *lab = NULL, *val;
		size_t llen = 0, nlen;
		double x, d;
		char *end;
		int cum;

		eol = strchr(line, '\n');
		if (!eol)
			eol = line + strlen(line);
		if (*line == '#') {
			if (!strncmp(line, "# TYPE ", 7) &&
			    sscanf(line, "# TYPE %255s %31s", fam, kind) != 2)
				fam[0] = kind[0] = 0;
			continue;
		}
		name_end = line + strcspn(line, "{ \n");
		nlen = (size_t)(name_end - line);
		val = name_end;
		if (*name_end == '{') {
			const char *q = name_end + 1;
			int quoted = 0;

			for (; q < eol && (quoted || *q != '}'); q++) {
				if (*q == '\\')
					q++;
				else if (*q == '"')
					quoted = !quoted;
			}
			if (q >= eol)
				continue;
			lab = name_end + 1;
			llen = (size_t)(q - lab);
			val = q + 1;
		}
		if (!nlen || *val != ' ')
			continue;
		x = strtod(val + 1, &end);
		if (end == val + 1 || !isfinite(x))
			continue;
		cum = cumulative(line, nlen, fam, kind);
		d = x;
		if (cum) {
			struct monitor_series *nv = v;
			double b;

			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				nv = realloc(v, cap * sizeof(*v));
			}
			if (!nv || !(nv[n].key = strndup(line, (size_t)(val - line)))) {
				series_free(nv ? nv : v, n);
				return -ENOMEM;
			}
			v = nv;
			v[n].value = x;
			v[n].missing = 0;
			b = base_of(mi, v[n++].key);
			/* less than the base: the series started again (a reset, as Prometheus's) */
			d = x >= b ? x - b : x;
			if (d == 0)
				continue;
		}
		fputs(mi->job, f);
		fputc('\t', f);
		tsv(f, mi->host, strlen(mi->host));
		fprintf(f,
			"\t-1\tmonitor\t%s\t%ld\t%llu\t%llu\t%lu\t0\t" MONITOR_INTERVAL_KIND "\t",
			file_id, rows, (unsigned long long)mi->start_ns,
			(unsigned long long)(end_ns - mi->start_ns),
			lab ? label_pid(lab, llen) : 0UL);
		tsv(f, line, nlen);
		fprintf(f, "\t{\"value\":%.17g,\"type\":\"%s\",\"labels\":{", d,
			cum ? "counter" : "gauge");
		if (lab)
			labels_json(f, lab, llen);
		fputs("}}\n", f);
		rows++;
	}
	qsort(v, n, sizeof(*v), series_cmp);
	series_free(mi->next, mi->nnext);
	mi->next = v;
	mi->nnext = n;
	return rows;
}

/*
 * The base a series that left the exposition keeps, for MONITOR_KEPT_INTERVALS: a process
 * that lost its series to busier ones and wins them again continues where it stopped
 * (metrics.c), so its increment is from its value then, not from 0.
 */
#define MONITOR_KEPT_INTERVALS 8640

void monitor_intervals__take(struct monitor_intervals *mi, __u64 end_ns)
{
	struct monitor_series *v = mi->next;
	size_t n = mi->nnext, cap = mi->nnext;
	int gone = 0;

	/* the base's series the interval did not have, kept a while (both sorted by key) */
	for (size_t i = 0, j = 0; i < mi->nbase; i++) {
		struct monitor_series *b = &mi->base[i];
		int c = 1;

		while (j < mi->nnext && (c = strcmp(v[j].key, b->key)) < 0)
			j++;
		if (!c || b->missing >= MONITOR_KEPT_INTERVALS) {
			free(b->key);
			continue;
		}
		if (n == cap) {
			struct monitor_series *nv = realloc(v, (cap * 2 + 16) * sizeof(*v));

			if (!nv) {
				free(b->key); /* out of memory: forgotten, taken as new if it comes back */
				continue;
			}
			v = nv;
			cap = cap * 2 + 16;
		}
		v[n] = *b;
		v[n++].missing++;
		gone = 1;
	}
	free(mi->base);
	if (gone)
		qsort(v, n, sizeof(*v), series_cmp);
	mi->base = v;
	mi->nbase = n;
	mi->next = NULL;
	mi->nnext = 0;
	mi->start_ns = end_ns;
}

void monitor_intervals__free(struct monitor_intervals *mi)
{
	series_free(mi->base, mi->nbase);
	series_free(mi->next, mi->nnext);
	mi->base = mi->next = NULL;
	mi->nbase = mi->nnext = 0;
}
