// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family's stats side: its report (toy_sum), its verdict rules, its page. */
#include <stdlib.h>
#include "family_stats.h"
#include "report.h"
#include "table.h"
#include "toy.h"

static void *toy_sum__new(void)
{
	return calloc(1, sizeof(struct toy_sum));
}

void toy_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct toy_sum *s = st;

	if (rec->type != TOY_REC)
		return;
	s->n++;
	s->total += ((const struct toy_tick *)rec)->value;
}

static int toy_sum__emit(void *st, const struct trace_model *m, struct table *t)
{
	enum { C_TICKS, C_TOTAL, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_TICKS] = { "ticks", "Ticks", TABLE_U64 },
		[C_TOTAL] = { "total", "Total", TABLE_U64 },
	};
	struct toy_sum *s = st;

	table__add_cols(t, cols, NCOLS);
	table__row(t);
	table__set_u64(t, C_TICKS, s->n);
	table__set_u64(t, C_TOTAL, s->total);
	return table__err(t);
}

static const struct report toy_sum = {
	.name = "toy_sum",
	.desc = "Toy ticks",
	.new = toy_sum__new,
	.add = toy_sum__add,
	.emit = toy_sum__emit,
	.free = free,
};

const struct report *const toy_reports[] = { &toy_sum, NULL };

const struct family_stats toy_stats = {
	.reports = toy_reports,
	.verdict = &toy_verdict,
	.page = &toy_page,
};
