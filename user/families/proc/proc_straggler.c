// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's straggler rule, from rank_waits (rank_waits.h): a job's ranks whose main
 * threads wait in collectives much of their time, for one rank that waits far less: it is the
 * one they wait for. Any backend, no probe on it. What the straggler did instead: its largest
 * blocking line outside collectives, or its time on a CPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include "hmap.h"
#include "human.h"
#include "proc_edges.h"
#include "rank_waits.h"
#include "stack_call.h"

#define WAIT_SHARE   0.20	  /* the waiting ranks: in collectives this much of their life */
#define STRAGGLE_GAP 0.15	  /* and this much more than the straggler */
#define WAIT_MIN_NS  100000000ull /* each, at least */
#define MAX_RANKS    64

struct rank_view {
	struct rank_of r;
	__u64 life, coll_ns;
	const struct main_waits *w;
};

static double share(const struct rank_view *r)
{
	return (double)r->coll_ns / r->life;
}

/* What rank R's main thread did instead: its largest blocking line outside collectives, or
 * its time on a CPU. */
static const char *instead(const struct rank_waits *st, const struct trace_model *m,
			   const struct rank_view *r, char *buf, size_t len)
{
	__u64 ns;
	const struct bs_frame *top = rank_waits__elsewhere(st, r->r.pid, &ns);
	char at[256], d[32];

	if (top && ns >= r->life / 4)
		snprintf(buf, len, "it was blocked %s (%.0f%% of its time) at %s",
			 human__ns((double)ns, d, sizeof(d)), 100.0 * ns / r->life,
			 stack_call__frame(top, m, at, sizeof(at)));
	else
		snprintf(buf, len,
			 "it was on a CPU or blocked outside collectives %.0f%% of its time",
			 100.0 * (1 - share(r)));
	return buf;
}

void proc_straggler__claims(struct verdict *v)
{
	const struct rank_waits *st = verdict__state(v, "rank_waits");
	const struct trace_model *m = verdict__model(v);
	struct rank_of ranks[MAX_RANKS];
	struct rank_view r[MAX_RANKS];
	size_t n = 0, slow = 0, waiting = 0, at = 0, used = 0, sused = 0;
	char list[256] = "", shares[256] = "", what[384], where[256] = "";
	double sum = 0;

	if (!st)
		return;
	for (size_t i = 0, k = rank_waits__ranks(m, ranks, MAX_RANKS); i < k; i++) {
		r[n] = (struct rank_view){ .r = ranks[i] };
		r[n].life = verdict__life(v, ranks[i].pid, ranks[i].pid);
		r[n].w = hmap__get(st->mains, (struct hkey){ ranks[i].pid, 0 }, 0);
		r[n].coll_ns = r[n].w ? r[n].w->coll_ns : 0;
		n += r[n].life != 0;
	}
	if (n < 2)
		return;
	for (size_t i = 1; i < n; i++)
		if (share(&r[i]) < share(&r[slow]))
			slow = i;
	for (size_t i = 0; i < n; i++) {
		if (i == slow || share(&r[i]) < WAIT_SHARE || r[i].coll_ns < WAIT_MIN_NS ||
		    share(&r[i]) - share(&r[slow]) < STRAGGLE_GAP)
			continue;
		used += snprintf(list + used, used < sizeof(list) ? sizeof(list) - used : 0, "%s%d",
				 waiting ? ", " : "", r[i].r.rank);
		sused += snprintf(shares + sused,
				  sused < sizeof(shares) ? sizeof(shares) - sused : 0, "%s%.0f%%",
				  waiting ? ", " : "", 100 * share(&r[i]));
		sum += share(&r[i]);
		if (!waiting++)
			at = i;
	}
	/* every other rank waits for it: one rank left out is not a straggler's job */
	if (!waiting || waiting + 1 < n)
		return;
	if (r[at].w->coll_at)
		stack_call__frame(r[at].w->coll_at, m, where, sizeof(where));
	verdict__claim(v, VERDICT_STRAGGLER, 1, sum / waiting, "rank_waits",
		       "rank %d (pid %u): rank%s %s waited for it in %s %s of their time%s%s; "
		       "rank %d waited %.0f%%",
		       r[slow].r.rank, r[slow].r.pid, waiting > 1 ? "s" : "", list, r[at].w->call,
		       shares, where[0] ? " at " : "", where, r[slow].r.rank,
		       100 * share(&r[slow]));
	verdict__detail(v, -1, "rank_waits", "rank %d: %s", r[slow].r.rank,
			instead(st, m, &r[slow], what, sizeof(what)));
}
