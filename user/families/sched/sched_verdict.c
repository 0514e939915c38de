// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched's rules for stats' verdict (verdict.h), from sched_sum: the focus thread's time on a
 * CPU, blocked, and runnable without a CPU; and the busiest thread's time on a CPU when it is
 * another (a thread holding the GIL, a data loader).
 */
#include <stdio.h>
#include "human.h"
#include "sched.h"
#include "table.h"
#include "verdict.h"

#define CPU_BOUND_SHARE 0.50	     /* of the thread's time on a CPU */
#define BLOCKED_SHARE	0.50	     /* off a CPU, not runnable */
#define RUNNABLE_SHARE	0.10	     /* runnable, waiting for a CPU */
#define SCHED_MIN_NS	100000000ull /* a claim rests on at least this much time */

struct sched_cols {
	const struct table *t;
	int pid, tid, on, off, blocked, runnable;
};

static int cols(struct verdict *v, struct sched_cols *c)
{
	c->t = verdict__table(v, "sched_sum");
	if (!c->t || !table__nrows(c->t))
		return -1;
	c->pid = table__col(c->t, "pid");
	c->tid = table__col(c->t, "tid");
	c->on = table__col(c->t, "oncpu_ns");
	c->off = table__col(c->t, "offcpu_ns");
	c->blocked = table__col(c->t, "blocked_ns");
	c->runnable = table__col(c->t, "runnable_ns");
	return 0;
}

static __u64 get(const struct sched_cols *c, int r, int col)
{
	return table__get_u64(c->t, r, col);
}

static void sched_account(void *st, struct verdict *v)
{
	struct sched_cols c;

	if (cols(v, &c))
		return;
	for (int r = 0; r < table__nrows(c.t); r++)
		verdict__add_time(v, (__u32)get(&c, r, c.pid), (__u32)get(&c, r, c.tid),
				  VERDICT_ONCPU, get(&c, r, c.on));
}

static int row_of(const struct sched_cols *c, __u32 pid, __u32 tid)
{
	for (int r = 0; r < table__nrows(c->t); r++)
		if (get(c, r, c->pid) == pid && get(c, r, c->tid) == tid)
			return r;
	return -1;
}

static void claim_cpu(struct verdict *v, const struct sched_cols *c, int r)
{
	__u64 on = get(c, r, c->on), life = on + get(c, r, c->off);
	char who[128], d1[32], d2[32];
	double share = life ? (double)on / life : 0;

	verdict__thread(v, (__u32)get(c, r, c->pid), (__u32)get(c, r, c->tid), who, sizeof(who));
	verdict__claim(v, VERDICT_CPU, share >= CPU_BOUND_SHARE && on >= SCHED_MIN_NS, share,
		       "sched_sum", "%s ran on a CPU %s of its %s", who,
		       human__ns((double)on, d1, sizeof(d1)),
		       human__ns((double)life, d2, sizeof(d2)));
}

/* The focus thread off its CPU: blocked (where: offcpu_stacks), or runnable without a CPU. */
static void claim_offcpu(struct verdict *v, const struct sched_cols *c, int r)
{
	__u64 blocked = get(c, r, c->blocked), runnable = get(c, r, c->runnable);
	__u64 life = get(c, r, c->on) + get(c, r, c->off);
	const struct table *where = verdict__table(v, "offcpu_stacks");
	char who[128], d1[32], d2[32];
	double share;

	if (!life)
		return;
	verdict__thread(v, (__u32)get(c, r, c->pid), (__u32)get(c, r, c->tid), who, sizeof(who));
	share = (double)blocked / life;
	/* a thread other than the main one blocked most of its life waits for work: a pool's,
	 * a library's progress thread; said, never the headline */
	if (share >= 0.05)
		verdict__claim(v, VERDICT_OFFCPU,
			       share >= BLOCKED_SHARE && blocked >= SCHED_MIN_NS &&
				       get(c, r, c->pid) == get(c, r, c->tid),
			       share, where && table__nrows(where) ? "offcpu_stacks" : "sched_sum",
			       "%s was blocked (asleep, off its CPU) %s of its %s", who,
			       human__ns((double)blocked, d1, sizeof(d1)),
			       human__ns((double)life, d2, sizeof(d2)));
	share = (double)runnable / life;
	if (share >= 0.01)
		verdict__claim(
			v, VERDICT_OFFCPU, share >= RUNNABLE_SHARE && runnable >= SCHED_MIN_NS,
			share, "sched_sum",
			"%s was ready to run but had no CPU for %s: more threads wanted a CPU "
			"than there were",
			who, human__ns((double)runnable, d1, sizeof(d1)));
}

static void sched_claims(void *st, struct verdict *v)
{
	__u32 pid = 0, tid = 0;
	struct sched_cols c;
	int focus = -1, busiest = 0;

	if (cols(v, &c))
		return;
	if (!verdict__focus(v, &pid, &tid))
		focus = row_of(&c, pid, tid);
	for (int r = 1; r < table__nrows(c.t); r++)
		if (get(&c, r, c.on) > get(&c, busiest, c.on))
			busiest = r;
	if (focus >= 0) {
		claim_cpu(v, &c, focus);
		claim_offcpu(v, &c, focus);
	}
	if (busiest != focus)
		claim_cpu(v, &c, busiest);
}

const struct family_verdict sched_verdict = {
	.account = sched_account,
	.claims = sched_claims,
	.reads = "sched_sum,offcpu_stacks?",
};
