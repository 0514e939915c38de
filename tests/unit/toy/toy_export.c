// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy family in the exports, described once for every format (export_model.h): its ticks
 * are slices by their style, their sum a counter at the end, each a row of its table; and a
 * format of its own, toy-total.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "export.h"
#include "export_model.h"
#include "toy.h"

/* SQLite: a table of its own, a row per tick. */
static const struct ex_column ticks_cols[] = {
	EXC_INT_NN("start"), EXC_INT_NN("end"), EXC_INT_NN("globalTid"), EXC_INT_NN("value"), { 0 },
};
static const struct ex_index ticks_idx[] = { { "start", "start" }, { 0 } };
static const struct ex_table toy_ticks = { "TOY_TICKS", ticks_cols, .indexes = ticks_idx };
static const struct ex_table *const toy_tables[] = { &toy_ticks, NULL };

static int toy_open(struct ex_sink *s, void **st)
{
	*st = calloc(1, sizeof(struct toy_sum));
	return *st ? 0 : -ENOMEM;
}

/* A tick: a slice by its style; its row; its value into the sum. */
static int toy_record(struct ex_sink *s, void *st, const struct bs_hdr *rec, const struct event *ev)
{
	toy_sum__add(st, rec, s->model);
	if (!ev)
		return 0;
	return ex_row(s, &toy_ticks, EX_ROW_ADD,
		      (struct ex_value[]){ EX_V_INT(ev->ts), EX_V_INT(ev->ts + ev->dur),
					   EX_V_INT(ex_gtid(ev->pid, ev->tid)),
					   ex_v_arg(ev, "value") },
		      NULL);
}

/* Every timeline: a counter of the ticks' values, at the end. */
static int toy_finish(struct ex_sink *s, void *st)
{
	const struct toy_sum *sum = st;
	static const struct ex_counter total = {
		.on = { .kind = EX_GLOBAL },
		.name = "toy total",
		.cat = "toy_cat",
		.desc = "The toy ticks' values, summed.",
	};

	return ex_count1(s, &total, 0, "total", EX_V_UINT(sum->total));
}

const struct family_export toy_export = {
	.tables = toy_tables,
	.open = toy_open,
	.free = free,
	.record = toy_record,
	.finish = toy_finish,
	.exporters = toy_exporters,
};

/* toy-total: a text file "ticks N total T", refused (-ENODATA) for a trace without ticks. */
struct toy_total {
	FILE *f;
	struct toy_sum sum;
};

static void *toy_total_open(const char *out, const struct trace_meta *meta,
			    const struct export_opts *opts, int *err)
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
