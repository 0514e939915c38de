// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's straggler rule, from rank_waits (rank_waits.h): a job's ranks whose main
 * threads wait in collectives much of their time, for one rank that waits far less: it is the
 * one they wait for. Any backend, no probe on it. What the straggler did instead: its largest
 * blocking line outside collectives, or its time on a CPU. After a pass the rule reads the
 * report's state; from a server's answers (stats --from), its table, the same numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include "hmap.h"
#include "human.h"
#include "proc_edges.h"
#include "rank_waits.h"
#include "stack_call.h"
#include "table.h"

#define WAIT_SHARE   0.20	  /* the waiting ranks: in collectives this much of their life */
#define STRAGGLE_GAP 0.15	  /* and this much more than the straggler */
#define WAIT_MIN_NS  100000000ull /* each, at least */
#define MAX_RANKS    64

/* A rank as the rule sees it: from rank_waits' state after a pass, or its table (a server's). */
struct rank_view {
	__s32 rank;
	__u32 pid;
	__u64 life, coll_ns, else_ns;
	const char *call;  /* the collective it waited in, "" none */
	char at[256];	   /* its line there, "" none */
	char else_at[256]; /* its largest blocking line outside collectives, "" none */
};

static double share(const struct rank_view *r)
{
	return (double)r->coll_ns / r->life;
}

/* What rank R's main thread did instead: its largest blocking line outside collectives, or
 * its time on a CPU. */
static const char *instead(const struct rank_view *r, char *buf, size_t len)
{
	char d[32];

	if (r->else_at[0] && r->else_ns >= r->life / 4)
		snprintf(buf, len, "it was blocked %s (%.0f%% of its time) at %s",
			 human__ns((double)r->else_ns, d, sizeof(d)), 100.0 * r->else_ns / r->life,
			 r->else_at);
	else
		snprintf(buf, len,
			 "it was on a CPU or blocked outside collectives %.0f%% of its time",
			 100.0 * (1 - share(r)));
	return buf;
}

/* The job's ranks (each main thread's life the verdict's) from rank_waits' state: how many. */
static size_t from_state(struct verdict *v, const struct rank_waits *st, struct rank_view *r)
{
	const struct trace_model *m = verdict__model(v);
	struct rank_of ranks[MAX_RANKS];
	size_t n = 0;

	for (size_t i = 0, k = rank_waits__ranks(m, ranks, MAX_RANKS); i < k; i++) {
		const struct main_waits *w =
			hmap__get(st->mains, (struct hkey){ ranks[i].pid, 0 }, 0);
		const struct bs_frame *top;

		r[n] = (struct rank_view){ .rank = ranks[i].rank, .pid = ranks[i].pid };
		r[n].life = verdict__life(v, ranks[i].pid, ranks[i].pid);
		r[n].coll_ns = w ? w->coll_ns : 0;
		r[n].call = w ? w->call : "";
		if (w && w->coll_at)
			stack_call__frame(w->coll_at, m, r[n].at, sizeof(r[n].at));
		top = rank_waits__elsewhere(st, ranks[i].pid, &r[n].else_ns);
		if (top)
			stack_call__frame(top, m, r[n].else_at, sizeof(r[n].else_at));
		n += r[n].life != 0;
	}
	return n;
}

/* The same from rank_waits' table (a server's answer, stats --from): its rows, by rank. */
static size_t from_table(struct verdict *v, const struct table *t, struct rank_view *r)
{
	int cr = table__col(t, "rank"), cp = table__col(t, "pid"), cw = table__col(t, "wait_ns"),
	    cc = table__col(t, "collective"), ca = table__col(t, "at"),
	    ce = table__col(t, "elsewhere_ns"), cea = table__col(t, "elsewhere_at");
	size_t n = 0;

	if (cr < 0 || cp < 0 || cw < 0 || cc < 0 || ca < 0 || ce < 0 || cea < 0)
		return 0;
	for (int i = 0; i < table__nrows(t) && n < MAX_RANKS; i++) {
		const char *call = table__get_str(t, i, cc), *at = table__get_str(t, i, ca),
			   *else_at = table__get_str(t, i, cea);

		r[n] = (struct rank_view){ .rank = (__s32)table__get_s64(t, i, cr),
					   .pid = (__u32)table__get_u64(t, i, cp) };
		r[n].life = verdict__life(v, r[n].pid, r[n].pid);
		r[n].coll_ns = table__get_u64(t, i, cw);
		r[n].call = call ? call : "";
		snprintf(r[n].at, sizeof(r[n].at), "%s", at ? at : "");
		r[n].else_ns = table__get_u64(t, i, ce);
		snprintf(r[n].else_at, sizeof(r[n].else_at), "%s", else_at ? else_at : "");
		n += r[n].life != 0;
	}
	return n;
}

void proc_straggler__claims(struct verdict *v)
{
	const struct rank_waits *st = verdict__state(v, "rank_waits");
	const struct table *t = verdict__table(v, "rank_waits");
	struct rank_view *r = calloc(MAX_RANKS, sizeof(*r));
	size_t n, slow = 0, waiting = 0, at = 0, used = 0, sused = 0;
	char list[256] = "", shares[256] = "", what[384];
	double sum = 0;

	if (!r)
		return;
	n = st ? from_state(v, st, r) : t ? from_table(v, t, r) : 0;
	if (n < 2)
		goto out;
	for (size_t i = 1; i < n; i++)
		if (share(&r[i]) < share(&r[slow]))
			slow = i;
	for (size_t i = 0; i < n; i++) {
		if (i == slow || share(&r[i]) < WAIT_SHARE || r[i].coll_ns < WAIT_MIN_NS ||
		    share(&r[i]) - share(&r[slow]) < STRAGGLE_GAP)
			continue;
		used += snprintf(list + used, used < sizeof(list) ? sizeof(list) - used : 0, "%s%d",
				 waiting ? ", " : "", r[i].rank);
		sused += snprintf(shares + sused,
				  sused < sizeof(shares) ? sizeof(shares) - sused : 0, "%s%.0f%%",
				  waiting ? ", " : "", 100 * share(&r[i]));
		sum += share(&r[i]);
		if (!waiting++)
			at = i;
	}
	/* every other rank waits for it: one rank left out is not a straggler's job */
	if (!waiting || waiting + 1 < n)
		goto out;
	verdict__claim(v, VERDICT_STRAGGLER, 1, sum / waiting, "rank_waits",
		       "rank %d (pid %u): rank%s %s waited for it in %s %s of their time%s%s; "
		       "rank %d waited %.0f%%",
		       r[slow].rank, r[slow].pid, waiting > 1 ? "s" : "", list, r[at].call, shares,
		       r[at].at[0] ? " at " : "", r[at].at, r[slow].rank, 100 * share(&r[slow]));
	verdict__detail(v, -1, "rank_waits", "rank %d: %s", r[slow].rank,
			instead(&r[slow], what, sizeof(what)));
out:
	free(r);
}
