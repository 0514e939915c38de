// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family's column in `bpfsight top`: ticks per second, per thread. */
#include "top_family.h"
#include "toy.h"

static const struct top_column toy_columns[] = {
	{ "toy", "TOY/s", "toy ticks per second", TOP_RATE, 0, 6 },
	{ 0 },
};

static void toy_top_record(struct top *t, void *st, const struct bs_hdr *rec)
{
	if (rec->type == TOY_REC)
		top__add(t, &family_toy, 0, rec->pid, rec->tid, 1);
}

const struct top_family toy_top = {
	.columns = toy_columns,
	.record = toy_top_record,
};
