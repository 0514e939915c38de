// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's straggler rule: a job's ranks (RANK in their environment, read at the edges)
 * whose main threads wait in collectives much of their time, for one rank that waits far
 * less: it is the one they wait for. The waits are the off-CPU intervals whose stacks (sched's,
 * on by default for a job's threads) are in a collective: an NCCL call, or torch.distributed's
 * (gloo, NCCL's host side, a store's barrier), stack_call__in. Any backend, no probe on it.
 *
 * What a rank is doing instead, the straggler's own time: its main thread's largest blocking
 * line outside collectives, or its time on a CPU (sched_sum).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frame_sum.h"
#include "hmap.h"
#include "human.h"
#include "proc_edges.h"
#include "sched_records.h"
#include "snap_records.h"
#include "stack_call.h"
#include "table.h"
#include "trace_model.h"
#include "trace_snaps.h"

#define WAIT_SHARE   0.20	  /* the waiting ranks: in collectives this much of their life */
#define STRAGGLE_GAP 0.15	  /* and this much more than the straggler */
#define WAIT_MIN_NS  100000000ull /* each, at least */
#define MAX_RANKS    64
#define CALL_LEN     64

/* A stack's collective, once per stack: stack_call__in walks every family's API table. */
struct stack_call {
	int known, collective;
	char call[CALL_LEN];
};

/* A main thread's off-CPU time with stacks: in collectives, and elsewhere by its own line. */
struct main_waits {
	__u64 coll_ns, coll_count, call_ns, other_top_ns;
	char call[CALL_LEN];		/* the collective with the most time */
	const struct bs_frame *coll_at; /* its line in the job's code (the last seen) */
	const struct bs_frame *other_at;
};

struct straggler_rule {
	struct hmap *calls;	/* {stack pointer, 0} -> stack_call */
	struct hmap *mains;	/* {pid, 0} -> main_waits */
	struct hmap *elsewhere; /* {pid, own frame} -> __u64 ns: off-CPU outside collectives */
};

void *proc_straggler__new(void)
{
	struct straggler_rule *st = calloc(1, sizeof(*st));

	if (st && (!(st->calls = hmap__new(sizeof(struct stack_call))) ||
		   !(st->mains = hmap__new(sizeof(struct main_waits))) ||
		   !(st->elsewhere = hmap__new(sizeof(__u64))))) {
		proc_straggler__free(st);
		st = NULL;
	}
	return st;
}

void proc_straggler__free(void *vst)
{
	struct straggler_rule *st = vst;

	if (st) {
		hmap__free(st->calls);
		hmap__free(st->mains);
		hmap__free(st->elsewhere);
	}
	free(st);
}

static const struct stack_call *classify(struct straggler_rule *st, const struct trace_stack *s,
					 const struct trace_model *m)
{
	struct stack_call *c = hmap__get(st->calls, (struct hkey){ (__u64)(uintptr_t)s, 0 }, 1);

	if (c && !c->known) {
		c->known = 1;
		c->collective = stack_call__in(s, m, c->call, sizeof(c->call)) &&
				(!strncmp(c->call, "nccl", 4) ||
				 !strncmp(c->call, "torch.distributed", 17));
	}
	return c;
}

void proc_straggler__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_offcpu *o = (const void *)rec;
	struct straggler_rule *st = vst;
	const struct bs_frame *own, *via;
	const struct trace_stack *s;
	const struct stack_call *c;
	struct main_waits *w;
	__u64 *ns;

	/* main threads only: a rank's own work; its library's threads idle by design */
	if (rec->type != BS_REC_OFFCPU || rec->size < sizeof(*o) || rec->pid != rec->tid ||
	    !(s = trace_model__event_stack(m, rec)) || !(c = classify(st, s, m)))
		return;
	own = frame_sum__own_site(s, m, &via);
	if (!c->collective) {
		if (own && (ns = hmap__get(st->elsewhere,
					   (struct hkey){ rec->pid, (__u64)(uintptr_t)own }, 1)))
			*ns += o->dur;
		return;
	}
	if (!(w = hmap__get(st->mains, (struct hkey){ rec->pid, 0 }, 1)))
		return; /* out of memory: the claim undercounts, it never invents */
	w->coll_ns += o->dur;
	w->coll_count++;
	if (!strcmp(w->call, c->call) || !w->call[0]) {
		snprintf(w->call, sizeof(w->call), "%s", c->call);
		w->coll_at = own;
	}
}

struct rank_waits {
	__u32 pid;
	__s32 rank;
	__u64 life, coll_ns;
	const struct main_waits *w;
};

static int by_rank(const void *a, const void *b)
{
	const struct rank_waits *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The job's ranks (their PROC_SNAPs' RANK, else LOCAL_RANK): *N of them into R. */
static size_t ranks(struct straggler_rule *st, struct verdict *v, struct rank_waits *r)
{
	const struct trace_model *m = verdict__model(v);
	const struct trace_snaps *s = trace_model__snaps(m);
	static const __u32 edges[] = { BS_SNAP_AT_END, BS_SNAP_AT_START, 0 };
	const struct bs_proc_snap *p;
	size_t i = 0, n = 0, k;
	int e = 0;

	/* the edges', else a trigger's snapshot (a flight recorder's dump has no edges) */
	for (;;) {
		p = edges[e] ? trace_snaps__next_proc_at(s, edges[e], &i)
			     : trace_snaps__next_proc(s, &i);
		if (!p && edges[e++]) {
			i = 0;
			continue;
		}
		if (!p || n == MAX_RANKS)
			break;
		__s32 rank = p->env_rank >= 0 ? p->env_rank : p->env_local_rank;

		for (k = 0; k < n && r[k].pid != p->h.pid; k++)
			;
		if (rank < 0 || k < n) /* read at both edges: once */
			continue;
		r[n] = (struct rank_waits){ .pid = p->h.pid, .rank = rank };
		r[n].life = verdict__life(v, p->h.pid, p->h.pid);
		r[n].w = hmap__get(st->mains, (struct hkey){ p->h.pid, 0 }, 0);
		r[n].coll_ns = r[n].w ? r[n].w->coll_ns : 0;
		if (r[n].life)
			n++;
	}
	qsort(r, n, sizeof(*r), by_rank);
	return n;
}

static double share(const struct rank_waits *r)
{
	return (double)r->coll_ns / r->life;
}

/* What rank R's main thread did instead: its largest blocking line outside collectives, or
 * its time on a CPU. */
static const char *instead(struct straggler_rule *st, struct verdict *v, const struct rank_waits *r,
			   char *buf, size_t len)
{
	const struct trace_model *m = verdict__model(v);
	const struct bs_frame *top = NULL;
	const __u64 *ns;
	__u64 top_ns = 0;
	struct hkey k;
	size_t it = 0;
	char at[256], d[32];

	while ((ns = hmap__next(st->elsewhere, &it, &k)))
		if (k.a == r->pid && *ns > top_ns) {
			top_ns = *ns;
			top = (const void *)(uintptr_t)k.b;
		}
	if (top && top_ns >= r->life / 4) {
		stack_call__where(&(struct trace_stack){ .nframes = 1, .frames = top }, m, at,
				  sizeof(at));
		snprintf(buf, len, "it was blocked %s (%.0f%% of its time) at %s",
			 human__ns((double)top_ns, d, sizeof(d)), 100.0 * top_ns / r->life, at);
	} else {
		snprintf(buf, len,
			 "it was on a CPU or blocked outside collectives %.0f%% of its time",
			 100.0 * (1 - share(r)));
	}
	return buf;
}

void proc_straggler__claims(void *vst, struct verdict *v)
{
	struct straggler_rule *st = vst;
	struct rank_waits r[MAX_RANKS];
	size_t n = ranks(st, v, r), slow = 0, waiting = 0, at = 0;
	char list[256] = "", shares[256] = "", what[384], where[256] = "";
	size_t used = 0, sused = 0;
	double sum = 0;

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
		return;
	if (r[at].w && r[at].w->coll_at)
		stack_call__where(&(struct trace_stack){ .nframes = 1, .frames = r[at].w->coll_at },
				  verdict__model(v), where, sizeof(where));
	verdict__claim(v, VERDICT_STRAGGLER, 1, sum / waiting, "offcpu_stacks",
		       "rank %d (pid %u): rank%s %s waited for it in %s %s of their time%s%s; "
		       "rank %d waited %.0f%%",
		       r[slow].rank, r[slow].pid, waiting > 1 ? "s" : "", list, r[at].w->call,
		       shares, where[0] ? " at " : "", where, r[slow].rank, 100 * share(&r[slow]));
	verdict__detail(v, -1, "offcpu_stacks", "rank %d: %s", r[slow].rank,
			instead(st, v, &r[slow], what, sizeof(what)));
}
