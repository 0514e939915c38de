// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family's export hooks: a Chrome counter, a Perfetto track, a SQLite table. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include "export_chrome.h"
#include "export_perfetto.h"
#include "export_sqlite.h"
#include "toy.h"

/* Chrome: a counter of the ticks' values written at the end. */
static int toy_chrome_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = calloc(1, sizeof(struct toy_sum));
	return *st ? 0 : -ENOMEM;
}

static int toy_chrome_observe(struct chrome *c, void *st, const struct bs_hdr *rec,
			      const struct trace_model *m)
{
	toy_sum__add(st, rec, m);
	return 0;
}

static int toy_chrome_finish(struct chrome *c, void *st)
{
	const struct toy_sum *s = st;

	chrome_begin(c, 'C', "toy_cat", "toy total", 0, 0);
	fprintf(c->f, ",\"ts\":0,\"args\":{\"total\":%llu}}", (unsigned long long)s->total);
	return 0;
}

const struct chrome_family toy_chrome = {
	.open = toy_chrome_open,
	.free = free,
	.observe = toy_chrome_observe,
	.finish = toy_chrome_finish,
};

/* Perfetto: a track of its own at the end, named after the ticks' total. */
static int toy_pf_open(struct pf *pf, void **st)
{
	*st = calloc(1, sizeof(struct toy_sum));
	return *st ? 0 : -ENOMEM;
}

static int toy_pf_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	toy_sum__add(st, rec, NULL);
	return 0;
}

static int toy_pf_finish(struct pf *pf, void *st, const struct trace_model *m)
{
	const struct toy_sum *s = st;
	char name[64];

	snprintf(name, sizeof(name), "toy total %llu", (unsigned long long)s->total);
	return pf__describe_named(pf, 0, pf->next_uuid++, 0, name, NULL);
}

const struct perfetto_family toy_perfetto = {
	.open = toy_pf_open,
	.free = free,
	.observe = toy_pf_observe,
	.finish = toy_pf_finish,
};

/* SQLite: a table of its own, a row per tick. */
static const char *const toy_sql[] = { "INSERT INTO TOY_TICKS VALUES (?, ?, ?, ?)" };

static int toy_sq_open(struct sq *s, void **st)
{
	return sq_stmts__open(s, toy_sql, 1, st);
}

static int toy_sq_record(struct sq *s, void *st, const struct bs_hdr *rec, const struct event *ev,
			 const struct trace_model *m)
{
	sqlite3_stmt *q = ((struct sq_stmts *)st)->stmt[0];

	sqlite3_bind_int64(q, 1, ev->ts);
	sqlite3_bind_int64(q, 2, ev->ts + ev->dur);
	sqlite3_bind_int64(q, 3, global_tid(ev->pid, ev->tid));
	sq_bind_arg(q, 4, ev, "value");
	return sq_run(s, q);
}

const struct sqlite_family toy_sqlite = {
	.schema = "CREATE TABLE TOY_TICKS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
		  " globalTid INTEGER NOT NULL, value INTEGER NOT NULL);",
	.indexes = "CREATE INDEX TOY_TICKS_start ON TOY_TICKS(start);",
	.open = toy_sq_open,
	.free = sq_stmts__free,
	.record = toy_sq_record,
};
