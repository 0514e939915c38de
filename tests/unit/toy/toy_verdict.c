// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy's rule for stats' verdict: from its own table, a claim that holds, so a family's
 * rule heads `stats` with nothing outside its files naming it.
 */
#include "table.h"
#include "toy.h"
#include "verdict.h"

static void toy_claims(void *st, struct verdict *v)
{
	const struct table *t = verdict__table(v, "toy_sum");

	if (t && table__nrows(t))
		verdict__claim(v, VERDICT_CPU, 1, 0.5, "toy_sum", "the toy ticked %llu times",
			       (unsigned long long)table__get_u64(t, 0, table__col(t, "ticks")));
}

const struct family_verdict toy_verdict = {
	.claims = toy_claims,
	.reads = "toy_sum", /* what a verdict from a server's answers must give it */
};
