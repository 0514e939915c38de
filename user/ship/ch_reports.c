// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports as SQL (ch_reports.h): the families' (their struct family.sql) found by name
 * through the registry, the files' order, and each report's SQL with its rows' filters put in.
 * The SQL itself is the families' (user/families/NAME/NAME_sql.c) and ch_verdict.c's.
 */
#include <stdlib.h>
#include <string.h>
#include "ch_reports.h"
#include "ch_schema.h"
#include "ch_sql.h"
#include "ch_verdict.h"
#include "family.h"

/* nsys's timing columns (time_sum.h), then the name. */
const struct ch_col ch_time_cols[] = {
	{ "time_pct", "Time (%)", 'd' }, { "total_ns", "Total Time (ns)", 'u' },
	{ "count", "Num Calls", 'u' },	 { "avg_ns", "Avg (ns)", 'd' },
	{ "med_ns", "Med (ns)", 'd' },	 { "min_ns", "Min (ns)", 'u' },
	{ "max_ns", "Max (ns)", 'u' },	 { "stddev_ns", "StdDev (ns)", 'd' },
	{ "name", "Name", 't' },	 {},
};

const struct ch_col ch_folded_cols[] = {
	{ "stack", "Stack", 't' },
	{ "samples", "Samples", 'u' },
	{},
};

const struct ch_report *ch_report__next(size_t *it)
{
	/* *IT: the family's index times 1024, plus the report's in its list */
	for (size_t f = *it >> 10, r = *it & 1023; f < (size_t)family__count(); f++, r = 0) {
		const struct family_sql *sql = families[f]->sql;

		if (sql && sql->reports && sql->reports[r]) {
			*it = f << 10 | (r + 1);
			return sql->reports[r];
		}
	}
	return NULL;
}

const struct ch_report *ch_report__every(size_t *it)
{
	/* the reports (ch_report__next's *IT), then each family's inputs, then the files' own */
	const size_t inputs = (size_t)1 << 40, own = (size_t)2 << 40;
	const struct ch_report *r = *it < inputs ? ch_report__next(it) : NULL;

	if (r)
		return r;
	if (*it < inputs)
		*it = inputs;
	for (size_t f = (*it - inputs) >> 10, i = *it & 1023;
	     *it < own && f < (size_t)family__count(); f++, i = 0) {
		const struct family_sql *sql = families[f]->sql;

		if (sql && sql->inputs && sql->inputs[i]) {
			*it = inputs + (f << 10 | (i + 1));
			return sql->inputs[i];
		}
	}
	if (*it < own)
		*it = own;
	return ch_verdict__own_at((*it)++ - own);
}

const struct ch_report *ch_report__find(const char *name)
{
	const struct ch_report *r;
	size_t it = 0;

	while ((r = ch_report__next(&it)))
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}

const struct ch_report *ch_report__named(const char *name)
{
	const struct ch_report *r = ch_report__find(name);

	for (size_t f = 0; !r && f < (size_t)family__count(); f++) {
		const struct family_sql *sql = families[f]->sql;

		for (size_t i = 0; sql && sql->inputs && sql->inputs[i] && !r; i++)
			if (!strcmp(sql->inputs[i]->name, name))
				r = sql->inputs[i];
	}
	return r ?: ch_verdict__own(name);
}

static const struct ch_col ch_file_order_cols[] = {
	{ "files", "Files", 't' },
	{},
};

const struct ch_report ch_file_order = {
	.name = "file_order",
	.cols = ch_file_order_cols,
	/* no file (rows of none): a typed empty array, where 18.16 types `[]` as Array(Nothing),
	 * which indexOf refuses against a file id (every query of {F} failed) */
	.sql = "SELECT if(empty(o), 'emptyArrayString()', concat('[', arrayStringConcat(arrayMap("
	       "x -> concat('\\'', x, '\\''), o), ', '), ']')) FROM (SELECT (" CH_FILE_ORDER
	       ") AS o) FORMAT TabSeparated",
};

/* TEXT with each {W} WHERE, {J} JOB, {F} FILES: malloc'd. */
static char *expand(const char *text, const char *where, const char *job, const char *files)
{
	size_t wl = strlen(where), jl = strlen(job), fl = strlen(files), n = 0, most;
	const char *p;
	char *out, *o;

	most = wl > jl ? wl : jl;
	most = most > fl ? most : fl;
	for (p = text; (p = strchr(p, '{')); p++)
		n++;
	out = malloc(strlen(text) + n * most + 1);
	if (!out)
		return NULL;
	for (o = out, p = text; *p;) {
		const char *with = NULL;

		if (p[0] == '{' && p[1] && p[2] == '}')
			with = p[1] == 'W' ? where : p[1] == 'J' ? job : p[1] == 'F' ? files : NULL;
		if (with) {
			o = stpcpy(o, with);
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

char *ch_report__sql(const struct ch_report *r, const char *where, const char *job,
		     const char *files)
{
	char *once, *out;

	if (files)
		return expand(r->sql, where, job, files);
	/* the order's subquery at each use: its own {W} and {J} expanded after */
	once = expand(r->sql, "{W}", "{J}", "(" CH_FILE_ORDER ")");
	out = once ? expand(once, where, job, "") : NULL;
	free(once);
	return out;
}
