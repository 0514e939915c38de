// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's rules over what was open at the recording's edges (proc_edges.h):
 *   - a hang found on arrival: two ranks or more (RANK in their environment), every one's main
 *     thread standing still from the start to the end (asleep in the same call, never run; or
 *     in the same call at the same line, no API call done), some waiting in a collective (an
 *     NCCL call, a CUDA synchronization, torch.distributed's), some elsewhere: whatever the
 *     backend (NCCL, gloo, a GPU that never finishes), with no collective entered while
 *     recording. The collective's number cannot be known then (it lives in NCCL's own
 *     structures): the call and the job's line say which;
 *   - a main thread blocked for the whole recording: asleep in one system call from before
 *     the start to the end, never run ("blocked in read for the whole 3.0 s, since at least
 *     5.0 s before the recording, in `wait_for_input` (job.py:7)"): a claim of the whole
 *     window (share 1), which no event of its own could make.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc.h"
#include "proc_edges.h"
#include "stack_call.h"
#include "syscall_names.h"
#include "thread_state.h"
#include "trace_snaps.h"

#define MAX_RANKS 64

struct rank_view {
	__u32 pid;
	__s32 rank;
	struct edge_thread et;
	__u64 asleep_ns; /* how long it is known to have slept when last read, 0: runs */
	char call[96];	 /* the collective it waits in, "" when none */
	char where[320];
	char state[96];
};

static const struct trace_stack *end_stack(const struct trace_model *m,
					   const struct edge_thread *et)
{
	return et->end && et->end->stack_id ? trace_model__stack(m, et->end->stack_id) : NULL;
}

/* " for at least 7.0 s" of a rank known asleep (it slept before the recording too). */
static const char *asleep_for(const struct rank_view *r, int edges, char *buf, size_t len)
{
	if (r->asleep_ns)
		snprintf(buf, len, " for %s%.1f s", edges ? "at least " : "", r->asleep_ns / 1e9);
	else
		buf[0] = 0;
	return buf;
}

/*
 * The job's ranks as a view read them: EDGES, those whose main thread was read at both edges
 * (stuck or not, as they say); else the hang trigger's snapshot, every rank it read (the
 * trigger judged them stopped).
 */
static size_t ranks_of(struct proc_edges *e, const struct trace_model *m, int edges, __u64 window,
		       struct rank_view *v)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_proc_snap *p;
	size_t i = 0, n = 0;

	while ((p = edges ? trace_snaps__next_proc_at(s, BS_SNAP_AT_END, &i)
			  : trace_snaps__next_proc(s, &i)) &&
	       n < MAX_RANKS) {
		__s32 rank = p->env_rank >= 0 ? p->env_rank : p->env_local_rank;
		struct rank_view *r = &v[n];
		const struct trace_stack *st;
		char buf[96];

		memset(r, 0, sizeof(*r));
		if (rank < 0)
			continue;
		if (edges) {
			if (!proc_edges__thread(e, m, p->h.pid, p->h.pid, &r->et) || !r->et.start)
				continue;
			r->asleep_ns = r->et.blocked ? window + r->et.since_ns : 0;
		} else {
			r->et.pid = r->et.tid = p->h.pid;
			r->et.end = trace_snaps__thread(s, p->h.pid);
			if (!r->et.end)
				continue;
			r->et.stuck = 1;
			r->asleep_ns =
				r->et.end->flags & BS_SNAP_RUNNING ? 0 : r->et.end->off_cpu_ns;
		}
		r->pid = p->h.pid;
		r->rank = rank;
		st = end_stack(m, &r->et);
		if (st && stack_call__in(st, m, buf, sizeof(buf)))
			snprintf(r->call, sizeof(r->call), "%s", buf);
		stack_call__where(st, m, r->where, sizeof(r->where));
		thread_state__text(r->et.end->state, r->et.end->syscall, r->et.end->flags, r->state,
				   sizeof(r->state));
		n++;
	}
	return n;
}

static int by_rank(const void *a, const void *b)
{
	const struct rank_view *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* "ranks 0, 1, 3" of those in V (N of them) whose call and line are W's. */
static const char *group_label(const struct rank_view *v, size_t n, const struct rank_view *w,
			       size_t *count, char *buf, size_t len)
{
	size_t used = 0;

	*count = 0;
	for (size_t i = 0; i < n && used < len; i++)
		if (!strcmp(v[i].call, w->call) && !strcmp(v[i].where, w->where))
			used += snprintf(buf + used, len - used, "%s%d", (*count)++ ? ", " : "",
					 v[i].rank);
	return buf;
}

/* Rank R, elsewhere: "in `load_batch` (x.py:43), sleeping in read for at least 7.0 s". */
static const char *elsewhere(const struct rank_view *r, int edges, char *buf, size_t len)
{
	char forb[64];

	snprintf(buf, len, "%s%s%s%s, %s%s", r->call[0] ? "in " : "", r->call,
		 r->call[0] ? " at " : "", r->where, r->state,
		 asleep_for(r, edges, forb, sizeof(forb)));
	return buf;
}

/*
 * A job whose ranks all stood still (EDGES: between the recording's edges; else at the hang
 * trigger's snapshot), some waiting in a collective: who waits where, who is elsewhere.
 */
static void job_hang(struct proc_edges *e, const struct trace_model *m, struct verdict *v,
		     int edges, __u64 window)
{
	struct rank_view *r = calloc(MAX_RANKS, sizeof(*r));
	char head[1024], who[256], rest[512], forb[64];
	const struct rank_view *w = NULL;
	size_t n, k, said = 0;

	if (!r)
		return;
	n = ranks_of(e, m, edges, window, r);
	for (size_t i = 0; i < n; i++)
		if (!r[i].et.stuck)
			goto out; /* a rank moved: no hang of the whole job in this window */
	qsort(r, n, sizeof(*r), by_rank);
	for (size_t i = 0; i < n && !w; i++)
		if (r[i].call[0])
			w = &r[i]; /* the lowest rank that waits in a collective names the waiters */
	if (n < 2 || !w)
		goto out;
	group_label(r, n, w, &k, who, sizeof(who));
	if (edges)
		snprintf(head, sizeof(head),
			 "%s %s %s in %s at %s for the whole %.1f s, entered before the recording "
			 "began",
			 k > 1 ? "ranks" : "rank", who, k > 1 ? "wait" : "waits", w->call, w->where,
			 window / 1e9);
	else
		snprintf(head, sizeof(head), "%s %s %s in %s at %s%s", k > 1 ? "ranks" : "rank",
			 who, k > 1 ? "wait" : "waits", w->call, w->where,
			 asleep_for(w, 0, forb, sizeof(forb)));
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(r[i].call, w->call) && !strcmp(r[i].where, w->where))
			continue;
		elsewhere(&r[i], edges, rest, sizeof(rest));
		if (!said++)
			verdict__claim(v, VERDICT_HANG, 1, -1, "open_at_edges",
				       "%s; rank %d is elsewhere: %s", head, r[i].rank, rest);
		else
			verdict__detail(v, -1, "", "rank %d is elsewhere too: %s", r[i].rank, rest);
	}
	if (!said) /* every rank in the same call: what they wait for is outside the job */
		verdict__claim(v, VERDICT_HANG, 1, -1, "open_at_edges",
			       "%s; no rank is elsewhere: what they wait for is outside the job",
			       head);
out:
	free(r);
}

/* Each main thread blocked in one system call from before the start to the end. */
static void blocked_mains(struct proc_edges *e, const struct trace_model *m, struct verdict *v,
			  __u64 window)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_thread_snap *b;
	struct edge_thread et;
	char who[160], where[320], state[96];
	size_t i = 0;

	while ((b = trace_snaps__next_thread_at(s, BS_SNAP_AT_END, &i))) {
		if (b->h.pid != b->h.tid || !proc_edges__thread(e, m, b->h.pid, b->h.tid, &et) ||
		    !et.blocked)
			continue;
		stack_call__where(end_stack(m, &et), m, where, sizeof(where));
		thread_state__text(b->state, b->syscall, b->flags, state, sizeof(state));
		verdict__claim(v, b->syscall >= 0 ? VERDICT_SYSCALL : VERDICT_OFFCPU, 1, 1.0,
			       "open_at_edges",
			       "%s was %s for the whole %.1f s (since at least %.1f s before the "
			       "recording) in %s",
			       verdict__thread(v, b->h.pid, b->h.tid, who, sizeof(who)), state,
			       window / 1e9, et.since_ns / 1e9, where);
	}
}

static void edges_claims(void *loaded, struct verdict *v)
{
	struct proc_edges *e = verdict__state(v, "open_at_edges");
	const struct trace_model *m = verdict__model(v);
	__u64 w0, w1;

	proc_straggler__claims(v);
	py_unread__claims(v);
	if (!e && proc_edges__loaded(loaded))
		e = loaded; /* judged from a server: its answer */
	if (!e)
		return;
	/*
	 * A hang trigger's dump whose calls in flight say nothing (no family saw one: gloo, a
	 * store's barrier): the ranks' stacks at the trigger do. With calls in flight, the nccl
	 * family's rule names the collective and its number.
	 */
	if (trace_snaps__taken(trace_model__snaps(m)) && !proc_edges__open_calls(e))
		job_hang(e, m, v, 0, 0);
	if (!proc_edges__window(m, &w0, &w1))
		return;
	job_hang(e, m, v, 1, w1 - w0);
	blocked_mains(e, m, v, w1 - w0);
}

static void *edges_rule_new(void)
{
	return proc_edges__new();
}

static void edges_rule_free(void *st)
{
	proc_edges__free(st);
}

/* From a server, what the report's pass keeps (proc_sql.c's open_at_edges_state); the
 * snapshots the rules read are the model's (stats --from puts them there). */
static int edges_rule_load(void *st, const char *name, const struct table *t)
{
	return strcmp(name, "open_at_edges_state") ? 0 : proc_edges__load(st, t);
}

const struct family_verdict proc_verdict = {
	.new = edges_rule_new,
	.claims = edges_claims,
	.free = edges_rule_free,
	/* the straggler rule: rank_waits' table from a server; the edges' and a hang's rules:
	 * open_at_edges' state (without it, judged without them) */
	.reads = "rank_waits,open_at_edges_state?",
	.load = edges_rule_load,
};
