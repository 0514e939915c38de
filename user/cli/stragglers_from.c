// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl_stragglers' sentences from the server (stats_from.h): stats FILE's (nccl_rank_report.c,
 * straggler_notes) read off what the server computes, its nccl_rank_sum (per rank process: the
 * collectives it entered last, the waits it made, the function most of them were in and the
 * longest) and the stragglers' table itself (the longest's function).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ch_reports.h"
#include "stats_from.h"
#include "table.h"

struct made {
	int row;
	__u64 ns;
};

/* Most waits made first; equal ones in the server's order (stats': its ranks' order). */
static int made_cmp(const void *a, const void *b)
{
	const struct made *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return x->row - y->row;
}

/*
 * The function of collective SEQ whose last entry made the others wait WAIT ns, in T (the
 * stragglers' table; its last rank is not the rank file's own unless shipped with --rank):
 * "?" when not there.
 */
static const char *worst_fn(const struct table *t, __u64 seq, __u64 wait)
{
	int cs = table__col(t, "seq"), cw = table__col(t, "wait_ns");

	for (int r = 0; r < table__nrows(t); r++)
		if (table__get_u64(t, r, cs) == seq && table__get_u64(t, r, cw) == wait)
			return table__get_str(t, r, table__col(t, "name"));
	return "?";
}

int stats_from__straggler_notes(struct ch_server *s, const char *where, const char *job,
				const char *files, struct table *t, const struct table *rank_sum)
{
	const struct ch_report *r = ch_report__find("nccl_rank_sum"); /* nccl's */
	struct table *mine = rank_sum || !r ? NULL : table__new(r->name);
	const struct table *rs = rank_sum ?: mine;
	int err = rank_sum ? 0
		  : mine   ? stats_from__table(s, r, where, job, files, mine)
		  : r	   ? -ENOMEM
			   : -ENOENT;
	int n = rs ? table__nrows(rs) : 0, async = 0, ce = table__col(t, "end_spread_ns");
	struct made *v = err ? NULL : calloc((size_t)n + 1, sizeof(*v));

	if (!err && !v)
		err = -ENOMEM;
	for (int r = 0; r < table__nrows(t) && !err; r++)
		async += !table__is_set(t, r, ce); /* a gloo collective: no end spread */
	if (async)
		table__add_note(
			t,
			"%d gloo collective%s, seen at each rank's entry only (where "
			"ProcessGroupGloo takes the tag): its wait is to the last entry; no end "
			"spread",
			async, async == 1 ? "" : "s");
	for (int r = 0; r < n && !err; r++)
		v[r] = (struct made){ r, table__get_u64(rs, r, table__col(rs, "made_wait_ns")) };
	if (v)
		qsort(v, (size_t)n, sizeof(*v), made_cmp);
	for (int i = 0; i < n && v && v[i].ns; i++) {
		int r = v[i].row;
		__u64 late = table__get_u64(rs, r, table__col(rs, "late"));
		const char *label = table__get_str(rs, r, table__col(rs, "name"));

		table__add_note(
			t,
			"%s made the others wait %.3f ms in %llu collective%s, %.0f%% in %s "
			"(the longest: %s #%llu, %.3f ms)",
			label ? label : "", v[i].ns / 1e6, (unsigned long long)late,
			late == 1 ? "" : "s",
			table__get_double(rs, r, table__col(rs, "top_op_pct")),
			table__get_str(rs, r, table__col(rs, "top_op")),
			worst_fn(t, table__get_u64(rs, r, table__col(rs, "worst_seq")),
				 table__get_u64(rs, r, table__col(rs, "worst_wait_ns"))),
			(unsigned long long)table__get_u64(rs, r, table__col(rs, "worst_seq")),
			table__get_u64(rs, r, table__col(rs, "worst_wait_ns")) / 1e6);
	}
	free(v);
	table__free(mine);
	return err ?: table__err(t);
}
