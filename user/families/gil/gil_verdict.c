// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil's rules for stats' verdict (verdict.h), read from its own tables: a thread that waited
 * for the GIL a fifth of its time or more is GIL-bound (gil_sum's contention), whom it waited
 * for (gil_blocked_by), and what the holders ran meanwhile (gil_stacks).
 */
#include <stdio.h>
#include <string.h>
#include "gil.h"
#include "hmap.h"
#include "human.h"
#include "table.h"
#include "trace_model.h"
#include "verdict.h"

#define GIL_BOUND_SHARE	 0.20	      /* of the thread's time waiting for the GIL */
#define GIL_BOUND_MIN_NS 100000000ull /* and at least this long: not a start-up blip */

/* Every thread's waits go to its account: the focus is the thread that did or waited most. */
static void gil_account(void *st, struct verdict *v)
{
	const struct table *t = verdict__table(v, "gil_sum");
	int pid, tid, total;

	if (!t)
		return;
	pid = table__col(t, "pid");
	tid = table__col(t, "tid");
	total = table__col(t, "wait_total_ns");
	for (int r = 0; r < table__nrows(t); r++)
		verdict__add_time(v, (__u32)table__get_u64(t, r, pid),
				  (__u32)table__get_u64(t, r, tid), VERDICT_GIL_WAIT,
				  table__get_u64(t, r, total));
}

/* Whom thread (PID, TID) waited for most (gil_blocked_by), as a claim. */
static void claim_holder(struct verdict *v, __u32 pid, __u32 tid, __u64 waited)
{
	const struct table *t = verdict__table(v, "gil_blocked_by");
	int cp, cw, ch, ct, best = -1;
	char who[128], d[32];
	__u64 ns;

	if (!t || !waited)
		return;
	cp = table__col(t, "pid");
	cw = table__col(t, "waiter_tid");
	ch = table__col(t, "holder_tid");
	ct = table__col(t, "total_ns");
	/* Rows are by total, largest first: the first of this waiter is its main holder. */
	for (int r = 0; r < table__nrows(t) && best < 0; r++)
		if (table__get_u64(t, r, cp) == pid && table__get_u64(t, r, cw) == tid)
			best = r;
	if (best < 0 || !table__get_u64(t, best, ch))
		return;
	ns = table__get_u64(t, best, ct);
	verdict__thread(v, pid, (__u32)table__get_u64(t, best, ch), who, sizeof(who));
	verdict__detail(v, (double)ns / waited, "gil_blocked_by",
			"of that wait, %s held the GIL (%s)", who,
			human__ns((double)ns, d, sizeof(d)));
}

/*
 * What the holders ran while others waited (gil_stacks' first holder line): by the time they
 * kept others waiting there (docs/GIL.md, "Holders by time").
 */
static void claim_holder_code(struct verdict *v)
{
	const struct table *t = verdict__table(v, "gil_stacks");
	int cr, cf, cfile, cl, ct, best = -1;
	double all = 0;
	const char *file;

	if (!t)
		return;
	cr = table__col(t, "role");
	cf = table__col(t, "func");
	cfile = table__col(t, "file");
	cl = table__col(t, "line");
	ct = table__col(t, "total_ns");
	for (int r = 0; r < table__nrows(t); r++) {
		const char *role = table__get_str(t, r, cr);

		if (!role || strcmp(role, "holder"))
			continue;
		all += table__get_number(t, r, ct);
		if (best < 0)
			best = r;
	}
	if (best < 0 || all <= 0)
		return;
	file = table__get_str(t, best, cfile);
	verdict__detail(v, table__get_number(t, best, ct) / all, "gil_stacks",
			"of the GIL waits by time, the holders were running %s (%s:%llu)",
			table__get_str(t, best, cf), file ? human__base(file) : "?",
			(unsigned long long)table__get_u64(t, best, cl));
}

/*
 * bpfsight's own thread in the job (the cupti-shim's poller, which takes the GIL to find the
 * functions --python-functions names): its waits are the tracer's, not the job's bottleneck.
 */
static int own_thread(const char *name)
{
	return name && !strcmp(name, "bpfsight-shim");
}

/* A process's rows of gil_sum, summed: all its threads, and those that lived a short while. */
struct gil_proc {
	double wait, life, short_wait, short_life;
	__u32 n, short_n;
};

static void proc_sum(struct verdict *v, const struct table *t, __u32 pid, __u64 window,
		     struct gil_proc *g)
{
	int cp = table__col(t, "pid"), ct = table__col(t, "tid"),
	    cw = table__col(t, "wait_total_ns");
	int cc = table__col(t, "contention_pct"), cn = table__col(t, "thread_name");

	memset(g, 0, sizeof(*g));
	for (int r = 0; r < table__nrows(t); r++) {
		double w = (double)table__get_u64(t, r, cw), pct = table__get_number(t, r, cc), l;

		if ((__u32)table__get_u64(t, r, cp) != pid || own_thread(table__get_str(t, r, cn)))
			continue;
		/* contention_pct is the wait's share of the thread's life there */
		l = pct > 0 ? w * 100 / pct
			    : (double)verdict__life(v, pid, (__u32)table__get_u64(t, r, ct));
		g->wait += w;
		g->life += l;
		g->n++;
		if (window && l < window / 2.0) {
			g->short_wait += w;
			g->short_life += l;
			g->short_n++;
		}
	}
}

/*
 * The process whose threads, summed, waited for the GIL the largest share of their lives (at
 * least GIL_BOUND_MIN_NS in all, two threads or more): a service's threads, each living a
 * request or two, wait under the per-thread minimum one by one; the process, the unit a user
 * deploys, does not (a ThreadingHTTPServer under load: request threads of 20 ms waiting 85%
 * of it).
 */
static void claim_process(struct verdict *v, const struct table *t)
{
	const struct trace_model *m = verdict__model(v);
	__u64 window = trace_model__end(m) > trace_model__start(m)
			       ? trace_model__end(m) - trace_model__start(m)
			       : 0;
	int cp = table__col(t, "pid");
	struct hmap *done = hmap__new(sizeof(__u8));
	struct gil_proc g, best = { 0 };
	__u32 best_pid = 0;
	char d1[32], d2[32], d3[32], d4[32], pool[160] = "";
	const char *name;

	if (!done)
		return;
	for (int r = 0; r < table__nrows(t); r++) {
		__u32 pid = (__u32)table__get_u64(t, r, cp);
		__u8 *seen = hmap__get(done, (struct hkey){ pid, 0 }, 1);

		/* Each process once, at its first row (a service's are a thousand rows). */
		if (!seen || *seen)
			continue;
		*seen = 1;
		proc_sum(v, t, pid, window, &g);
		if (g.n > 1 && g.life > 0 && g.wait >= GIL_BOUND_MIN_NS &&
		    (!best_pid || g.wait / g.life > best.wait / best.life)) {
			best = g;
			best_pid = pid;
		}
	}
	hmap__free(done);
	if (!best_pid)
		return;
	if (best.short_n >= 8)
		snprintf(pool, sizeof(pool),
			 "; %u of them lived under half the recording (a pool), each waiting %s of "
			 "its %s on average",
			 best.short_n, human__ns(best.short_wait / best.short_n, d3, sizeof(d3)),
			 human__ns(best.short_life / best.short_n, d4, sizeof(d4)));
	name = trace_model__process_name(m, best_pid);
	verdict__claim(v, VERDICT_GIL, best.wait / best.life >= GIL_BOUND_SHARE,
		       best.wait / best.life, "gil_sum",
		       "%s (pid %u): its %u threads waited for the GIL %s of their %s%s",
		       name ? name : "?", best_pid, best.n, human__ns(best.wait, d1, sizeof(d1)),
		       human__ns(best.life, d2, sizeof(d2)), pool);
}

/* Whether row R's waits are enough for a claim to rest on. */
static int big_enough(const struct table *t, int r, int cw)
{
	return table__get_u64(t, r, cw) >= GIL_BOUND_MIN_NS;
}

static void gil_claims(void *st, struct verdict *v)
{
	const struct table *t = verdict__table(v, "gil_sum");
	int cp, ct, cw, cc, cn, best = -1, over = 0;
	char who[128], d1[32], d2[32], more[64] = "";
	double pct, best_pct = 0;
	__u64 wait;

	if (!t)
		return;
	cp = table__col(t, "pid");
	ct = table__col(t, "tid");
	cw = table__col(t, "wait_total_ns");
	cc = table__col(t, "contention_pct");
	cn = table__col(t, "thread_name");
	for (int r = 0; r < table__nrows(t); r++) {
		if (own_thread(table__get_str(t, r, cn)))
			continue;
		pct = table__get_number(t, r, cc);
		wait = table__get_u64(t, r, cw);
		if (pct >= GIL_BOUND_SHARE * 100 && wait >= GIL_BOUND_MIN_NS)
			over++;
		/* A thread that waited long enough to hold the rule beats a higher share of a
		 * life too short to (a request thread's 18 ms of its 21). */
		if (wait && (best < 0 || big_enough(t, r, cw) > big_enough(t, best, cw) ||
			     (big_enough(t, r, cw) == big_enough(t, best, cw) && pct > best_pct))) {
			best = r;
			best_pct = pct;
		}
	}
	if (best < 0 || best_pct < 5)
		return; /* no thread waited enough to speak of */
	wait = table__get_u64(t, best, cw);
	if (over > 1)
		snprintf(more, sizeof(more), "; %d threads waited over %.0f%% of theirs", over,
			 GIL_BOUND_SHARE * 100);
	verdict__thread(v, (__u32)table__get_u64(t, best, cp), (__u32)table__get_u64(t, best, ct),
			who, sizeof(who));
	verdict__claim(v, VERDICT_GIL,
		       best_pct >= GIL_BOUND_SHARE * 100 && wait >= GIL_BOUND_MIN_NS,
		       best_pct / 100, "gil_sum", "%s waited for the GIL %s of its %s%s", who,
		       human__ns((double)wait, d1, sizeof(d1)),
		       human__ns(best_pct > 0 ? wait * 100.0 / best_pct : 0, d2, sizeof(d2)), more);
	claim_holder(v, (__u32)table__get_u64(t, best, cp), (__u32)table__get_u64(t, best, ct),
		     wait);
	claim_holder_code(v);
	claim_process(v, t);
}

const struct family_verdict gil_verdict = {
	.account = gil_account,
	.claims = gil_claims,
	.reads = "gil_sum,gil_blocked_by,gil_stacks?",
};
