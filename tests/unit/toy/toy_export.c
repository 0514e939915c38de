// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy family's export hooks: a Chrome counter, a Perfetto track, a SQLite table; and a
 * format of its own, toy-total.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "export.h"
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

/* toy-total: a text file "ticks N total T", refused (-ENODATA) for a trace without ticks. */
struct toy_total {
	FILE *f;
	struct toy_sum sum;
};

static void *toy_total_open(const char *out, const struct trace_meta *meta, int *err)
{
	struct toy_total *t = calloc(1, sizeof(*t));
	int fd = t ? export__create(out) : -ENOMEM;

	if (fd >= 0 && !(t->f = fdopen(fd, "w")))
		close(fd);
	if (!t || !t->f) {
		*err = fd < 0 ? fd : -ENOMEM;
		free(t);
		return NULL;
	}
	return t;
}

static int toy_total_record(void *st, const struct bs_hdr *rec, const struct event *ev,
			    const struct trace_model *m)
{
	toy_sum__add(&((struct toy_total *)st)->sum, rec, m);
	return 0;
}

static int toy_total_finish(void *st, const struct trace_model *m,
			    const struct trace_status *status)
{
	struct toy_total *t = st;
	int err = t->sum.n ? 0 : -ENODATA;

	if (!err)
		fprintf(t->f, "ticks %llu total %llu\n", (unsigned long long)t->sum.n,
			(unsigned long long)t->sum.total);
	if (fclose(t->f) && !err)
		err = -EIO;
	free(t);
	return err;
}

static void toy_total_abort(void *st)
{
	struct toy_total *t = st;

	fclose(t->f);
	free(t);
}

static const struct exporter toy_total = {
	.format = "toy-total",
	.desc = "the toy ticks' count and total, as text",
	.suffix = ".toy",
	.open = toy_total_open,
	.record = toy_total_record,
	.finish = toy_total_finish,
	.abort = toy_total_abort,
	.needs = "toy ticks",
};

const struct exporter *const toy_exporters[] = { &toy_total, NULL };
