// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ledger's critical unit (ledger.h): the thread, or pool of like threads, that carries the
 * job's progress; and, for time ready to run outside any wait, who had the CPUs meanwhile.
 *
 * A unit is weighed by the progress it carries: the time one of its threads is on a CPU or
 * wants one, and half the time more that one of them waits at the job's own code (a thread
 * waiting on another carries less than that other); a wait for work by design (a pool's worker
 * waiting for its next task, Thread.join, a library's thread in epoll_wait or spinning on
 * sched_yield, a wait inside a library's own thread) weighs nothing, nor does a thread asleep
 * in one wait nearly throughout (a wrapper shell in wait4, a main thread that only sleeps). A
 * process's threads named alike but for their numbers ("w0".."w3", "ThreadPoolExecutor-0_1",
 * "Thread-7 (process_request_thread)") are a pool, weighed together. The critical unit is the
 * weightiest; its process's main thread instead where that one drives the job (engaged half
 * its time, not mostly waiting for that unit's work: a trainer, a main loop that works between
 * the tasks it fans out) or is nearly as weighty; never a process
 * of a pool whose owner is traced (a DataLoader worker: its trainer's).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "ledger_int.h"
#include "trace_model.h"

#define MAIN_FIRST 0.8 /* a main thread this engaged beside the best unit leads */

/*
 * A thread other than the main one waiting for I/O readiness waits for work; so does one that
 * spins yielding its CPU between polls that do not block (NCCL's socket progress thread with
 * nothing to do, seen on an H100: its time in sched_yield, ready to run there).
 */
static int idle_call(const struct lthread *t, enum ledger_kind kind, const char *what)
{
	return t->tid != t->pid && (kind == LEDGER_IO || !strcmp(what, "sched_yield"));
}

/*
 * V[0..N) (elements of SIZE bytes, each starting with its u64 time) sorted by time, from the
 * sorted runs that start at RUNS[0..NRUNS) (each thread's, in its order): merged two by two,
 * n log(runs), not a sort of them all. 0, -ENOMEM. Inlined: each caller's SIZE a constant,
 * an element's copy is a few moves, not a call (bench/RESULTS.md, "The ledger's cost").
 */
static inline __attribute__((always_inline)) int merge_runs(void *v, size_t n, size_t size,
							    size_t *runs, size_t nruns)
{
	char *tmp, *from = v, *to;

	if (nruns < 2 || !n)
		return 0; /* sorted already; V may be NULL (memcpy to NULL is undefined, even of 0) */
	tmp = malloc(n * size);
	to = tmp;
	if (!tmp)
		return -ENOMEM;
	while (nruns > 1) {
		size_t k = 0;

		for (size_t r = 0; r < nruns; r += 2) {
			size_t a = runs[r], am = r + 1 < nruns ? runs[r + 1] : n;
			size_t b = am, bm = r + 2 < nruns ? runs[r + 2] : n, o = a;

			while (a < am || b < bm) {
				__u64 ta = 0, tb = 0;
				int first;

				if (a < am)
					memcpy(&ta, from + a * size, sizeof(ta));
				if (b < bm)
					memcpy(&tb, from + b * size, sizeof(tb));
				first = b >= bm || (a < am && ta <= tb);
				memcpy(to + o++ * size, from + (first ? a++ : b++) * size, size);
			}
			runs[k++] = runs[r];
		}
		nruns = k;
		from = from == (char *)v ? tmp : v;
		to = to == (char *)v ? tmp : v;
	}
	if (from != (char *)v)
		memcpy(v, from, n * size);
	free(tmp);
	return 0;
}

/* One piece of a unit's engaged time: [ts, end), BUSY on a CPU or wanting one, else a wait. */
struct span {
	__u64 ts, end;
	int busy;
};

/* A segment's part in the progress: 1 busy, 2 a wait at the job's code, 0 none. */
static int engages(const struct ledger *l, const struct lthread *t, const struct lseg *g)
{
	const struct lclass *c = g->cls == LCLASS_NONE ? NULL : &l->cls[g->cls];

	if (g->state == LSTATE_ONCPU)
		return 1;
	if (c &&
	    (c->idle || idle_call(t, c->kind == LEDGER_RUNNABLE ? c->inside : c->kind, c->what)))
		return 0;
	if (g->state == LSTATE_RUNNABLE)
		return 1;
	return c && c->own ? 2 : 0;
}

/* The length of the union of spans S[0..N) (sorted): BUSY ones only, or all. */
static __u64 union_of(const struct span *s, size_t n, int busy_only)
{
	__u64 len = 0, a = 0, b = 0;
	int open = 0;

	for (size_t i = 0; i < n; i++) {
		if (busy_only && !s[i].busy)
			continue;
		if (open && s[i].ts <= b) {
			if (s[i].end > b)
				b = s[i].end;
			continue;
		}
		if (open)
			len += b - a;
		a = s[i].ts;
		b = s[i].end;
		open = 1;
	}
	return len + (open ? b - a : 0);
}

/*
 * How much of the job's progress the threads IX[0..N) carry together: the time at least one
 * of them is on a CPU or wanting one, and half the time more that one of them waits at the
 * job's own code (a thread waiting on another carries less than that other); never a wait
 * for work by design, nor anything of a thread asleep in one wait nearly throughout. For one
 * thread: its time busy and half its waits.
 */
static __u64 score_of(const struct ledger *l, const size_t *ix, size_t n)
{
	struct span *s = NULL;
	size_t ns = 0, cap = 0;
	__u64 busy = 0, all = 0;

	if (n == 1) { /* one thread: its pieces never overlap */
		const struct lthread *t = &l->thr[ix[0]];

		for (size_t j = 0; !t->throughout && j < t->nseg; j++) {
			int e = engages(l, t, &t->seg[j]);

			if (e)
				*(e == 1 ? &busy : &all) += t->seg[j].end - t->seg[j].ts;
		}
		return busy + all / 2;
	}
	size_t *runs = malloc(n * sizeof(*runs) + 1);

	if (!runs)
		return 0;
	for (size_t k = 0; k < n; k++) {
		const struct lthread *t = &l->thr[ix[k]];

		runs[k] = ns; /* a thread's pieces in its order: a run */
		for (size_t j = 0; !t->throughout && j < t->nseg; j++) {
			int e = engages(l, t, &t->seg[j]);

			if (!e)
				continue;
			if (array__grow((void **)&s, ns, &cap, sizeof(*s))) {
				free(s);
				free(runs);
				return 0;
			}
			s[ns++] = (struct span){ t->seg[j].ts, t->seg[j].end, e == 1 };
		}
	}
	if (merge_runs(s, ns, sizeof(*s), runs, n)) {
		free(s);
		free(runs);
		return 0;
	}
	free(runs);
	busy = union_of(s, ns, 1);
	all = union_of(s, ns, 0);
	free(s);
	return busy + (all - busy) / 2;
}

/* "w" of "w3", "Thread- (worker)" of "Thread-12 (worker)": a name without its numbers. */
static void stem(const char *name, char *out, size_t len)
{
	size_t n = 0;

	for (; name && *name && n + 1 < len; name++)
		if (!isdigit((unsigned char)*name))
			out[n++] = *name;
	out[n] = 0;
}

struct cand {
	__u32 pid;
	char stem[96];
	int main; /* the process's main thread */
	__u32 tid, n;
	__u64 score, total; /* its progress (score_of), its threads' time */
	__u64 lo, hi;	    /* its progress's bounds, from its threads' quick sums */
	size_t *ix;	    /* its threads (indexes in the ledger's) */
	size_t cap;
};

static int is_member(const struct trace_model *m, __u32 pid, const struct ledger *l)
{
	__u32 owner = 0, n = 0;
	const char *what = trace_model__pool(m, pid, &owner, &n);

	if (!what || !owner)
		return 0;
	for (size_t i = 0; i < l->nthr; i++) /* the owner is traced: the member is its part */
		if (l->thr[i].pid == owner && l->thr[i].total)
			return 1;
	return 0;
}

static void free_cands(struct cand *c, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(c[k].ix);
	free(c);
}

/* Better: the more progress, ties to the lower ids (the same trace, the same unit). */
static int better(const struct cand *x, const struct cand *y)
{
	if (x->score != y->score)
		return x->score > y->score;
	return x->pid < y->pid || (x->pid == y->pid && x->tid < y->tid);
}

#define MAIN_BUSY 0.5 /* a main thread engaged this much of its time drives the job */

/*
 * Of main thread candidate M's waits at the job's code (each weighing half in its score), those
 * for a lock (a Future, a queue, a condition: not the GIL) that unit B's threads ended: M
 * waited for B's work then. A main thread that drives is engaged half its time, and not mostly
 * by waiting for B: one waiting on its pool's futures 96% of its time scored 0.52 of it (its 4%
 * on a CPU or ready to run, under load) and "drove" the job over the pool doing the work (0.497
 * on a quiet machine); a torch op's main thread waiting for its intra-op threads while short
 * of a CPU half its time drives them.
 */
static __u64 waits_for(const struct ledger *l, const struct cand *m, const struct cand *b)
{
	__u64 ns = 0;

	for (size_t j = 0; j < m->n; j++) {
		const struct lthread *t = &l->thr[m->ix[j]];

		for (size_t k = 0; k < t->nwaits; k++) {
			const struct lwait *w = &t->waits[k];
			const struct lclass *c = &l->cls[w->cls];

			if (c->kind != LEDGER_LOCK || !c->own || c->idle)
				continue;
			for (size_t i = 0; i < b->n; i++)
				if (l->thr[b->ix[i]].tid == w->waker &&
				    l->thr[b->ix[i]].pid == t->pid) {
					ns += w->ns;
					break;
				}
		}
	}
	return ns;
}

static int pick(struct ledger *l, struct cand *best, __u64 *top)
{
	struct cand *c = NULL, *b = NULL;
	size_t nc = 0, cc = 0;
	__u64 lo_best = 0;

	for (size_t i = 0; i < l->nthr; i++) {
		const struct lthread *t = &l->thr[i];
		const char *name = trace_model__thread_name(l->m, t->tid);
		char st[96];
		size_t k;

		if (!t->total || is_member(l->m, t->pid, l))
			continue;
		stem(name && *name ? name : "thread", st, sizeof(st));
		for (k = 0; k < nc; k++)
			if (c[k].pid == t->pid && !c[k].main && t->tid != t->pid &&
			    !strcmp(c[k].stem, st))
				break;
		if (k == nc) {
			if (array__grow((void **)&c, nc, &cc, sizeof(*c))) {
				free_cands(c, nc);
				return -ENOMEM;
			}
			memset(&c[nc], 0, sizeof(c[0]));
			c[nc].pid = t->pid;
			c[nc].tid = t->tid;
			c[nc].main = t->tid == t->pid;
			snprintf(c[nc].stem, sizeof(c[nc].stem), "%s", st);
			nc++;
		}
		if (array__grow((void **)&c[k].ix, c[k].n, &c[k].cap, sizeof(*c[k].ix))) {
			free_cands(c, nc);
			return -ENOMEM;
		}
		c[k].ix[c[k].n++] = i;
		c[k].total += t->total;
		if (t->tid < c[k].tid)
			c[k].tid = t->tid;
	}
	/*
	 * Each candidate's weight lies between its time on a CPU (a pool's: its busiest
	 * thread's) and its time on a CPU, ready and half blocked (at most its life): only the
	 * ones whose upper bound reaches the best lower bound are built and weighed, and the
	 * main threads that may drive.
	 */
	for (size_t k = 0; k < nc; k++) {
		__u64 busy = 0, blocked = 0, life = 0;

		c[k].lo = 0;
		for (size_t j = 0; j < c[k].n; j++) {
			const struct lthread *t = &l->thr[c[k].ix[j]];

			if (!t->throughout_q) {
				busy += t->q_on + t->q_ready;
				blocked += t->q_blocked;
				if (t->q_on > c[k].lo)
					c[k].lo = t->q_on;
			}
			if (t->total > life)
				life = t->total;
		}
		/* its union of time busy, and half that of its waits: each at most its life */
		busy = busy < life ? busy : life;
		blocked = blocked < life ? blocked : life;
		c[k].hi = busy + blocked / 2;
		if (c[k].lo > lo_best)
			lo_best = c[k].lo;
	}
	for (size_t k = 0; k < nc; k++) {
		if (c[k].hi < lo_best && !(c[k].main && (double)c[k].hi >= MAIN_BUSY * c[k].total))
			continue;
		for (size_t j = 0; j < c[k].n; j++)
			if (ledger__build_thread(l, &l->thr[c[k].ix[j]]))
				goto nomem;
		c[k].score = score_of(l, c[k].ix, c[k].n);
		if (!b || better(&c[k], b))
			b = &c[k];
	}
	/*
	 * Its process's main thread carries the progress when it drives (engaged half its time,
	 * not mostly by waiting for the best unit's work: a trainer waiting for the GIL its
	 * helper holds, a loop that works between the tasks it fans out) or is nearly as engaged
	 * as the best.
	 */
	*top = b ? b->score : 0;
	for (size_t k = 0; b && k < nc; k++) {
		double score = (double)c[k].score, life = (double)c[k].total;

		if (!c[k].main || c[k].pid != b->pid || b->main || !c[k].score)
			continue;
		if ((score >= MAIN_BUSY * life &&
		     score - (double)waits_for(l, &c[k], b) / 2 >= MAIN_BUSY / 2 * life) ||
		    score >= MAIN_FIRST * (double)b->score)
			b = &c[k];
	}
	if (b) {
		*best = *b;
		best->ix = NULL;
	}
	free_cands(c, nc);
	return b && best->score ? 0 : -ENOENT;
nomem:
	free_cands(c, nc);
	return -ENOMEM;
}

/* The job: the traced processes of the critical one's lineage (a launched command's tree). */
static __u32 root_of(const struct ledger *l, __u32 pid)
{
	for (int hops = 0; hops < 64; hops++) {
		__u32 pp = trace_model__ppid(l->m, pid);
		int traced = 0;

		for (size_t i = 0; pp && i < l->nthr && !traced; i++)
			traced = l->thr[i].pid == pp;
		if (!traced)
			break;
		pid = pp;
	}
	return pid;
}

struct step {
	__u64 ts;
	__s32 busy, want; /* the job's threads on a CPU, and ready to run */
};

/*
 * A thread not built: its time on a CPU (the gaps between its off-CPU intervals) and ready to
 * run (their tails, a preempted one whole) as steps, those inside windows Q (sorted, apart).
 */
static int raw_steps(const struct lthread *t, const void *qv, size_t nq, struct step **s, size_t *n,
		     size_t *cap)
{
	const struct window {
		__u64 ts, end;
	} *q = qv;
	__u64 cur = t->w0;
	size_t j = 0;

	for (size_t k = 0; k <= t->noff && j < nq; k++) {
		const struct loff *o = k < t->noff ? &t->off[k] : NULL;
		__u64 out = o ? (o->out > t->w0 ? o->out : t->w0) : t->w1;
		__u64 in = o ? (o->in < t->w1 ? o->in : t->w1) : t->w1;
		__u64 wake = o && o->blocked ? o->in - o->run : out;
		__u64 piece[2][2] = { { cur, out < t->w1 ? out : t->w1 },
				      { wake > out ? wake : out, in } };

		for (int p = 0; p < 2 && j < nq; p++) {
			__u64 a = piece[p][0], b = piece[p][1];

			if (b <= a || (p && !o))
				continue;
			while (j < nq && q[j].end <= a)
				j++; /* the windows that ended before it */
			if (j == nq || q[j].ts >= b)
				continue; /* none overlaps it */
			if (array__grow((void **)s, *n + 1, cap, sizeof(**s)))
				return -ENOMEM;
			(*s)[(*n)++] = (struct step){ a, !p, p };
			(*s)[(*n)++] = (struct step){ b, -!p, -p };
		}
		if (o && in > cur)
			cur = in;
	}
	return 0;
}

/*
 * The job's threads on a CPU and wanting one, as steps over time (summed from deltas), where
 * the threads of process PID wait for a CPU (what own_time asks): a step elsewhere answers
 * nothing.
 */
static int job_steps(const struct ledger *l, const char *in_job, __u32 pid, struct step **out,
		     size_t *nout)
{
	struct window {
		__u64 ts, end;
	} *q = NULL;
	struct step *s = NULL;
	size_t n = 0, cap = 0, nq = 0, qcap = 0, j, *runs = NULL, nruns = 0, rcap = 0;

	for (size_t i = 0; i < l->nthr; i++) { /* the windows asked about, a run per thread */
		if (l->thr[i].pid != pid)
			continue;
		if (array__grow((void **)&runs, nruns, &rcap, sizeof(*runs)))
			goto nomem;
		runs[nruns++] = nq;
		for (size_t k = 0; k < l->thr[i].nseg; k++) {
			const struct lseg *g = &l->thr[i].seg[k];

			if (g->state != LSTATE_RUNNABLE)
				continue;
			if (array__grow((void **)&q, nq, &qcap, sizeof(*q)))
				goto nomem;
			q[nq++] = (struct window){ g->ts, g->end };
		}
	}
	if (merge_runs(q, nq, sizeof(*q), runs, nruns))
		goto nomem;
	nruns = 0;
	for (size_t i = 1, k = 0; i <= nq && nq;
	     i++) { /* merged: each window ends before the next */
		if (i < nq && q[i].ts <= q[k].end) {
			if (q[i].end > q[k].end)
				q[k].end = q[i].end;
			continue;
		}
		if (i < nq)
			q[++k] = q[i];
		else
			nq = k + 1;
	}
	for (size_t i = 0; i < l->nthr; i++) {
		const struct lthread *t = &l->thr[i];

		if (!in_job[i])
			continue;
		if (array__grow((void **)&runs, nruns, &rcap, sizeof(*runs)))
			goto nomem;
		runs[nruns++] = n; /* a thread's steps come in its time order: a run to merge */
		if (!t->built) { /* its raw intervals: the off-CPU ones' gaps, their waits for a CPU */
			if (raw_steps(t, q, nq, &s, &n, &cap))
				goto nomem;
			continue;
		}
		j = 0;
		for (size_t k = 0; k < t->nseg; k++) {
			const struct lseg *g = &t->seg[k];
			int on = g->state == LSTATE_ONCPU, ready = g->state == LSTATE_RUNNABLE;

			if (!on && !ready)
				continue;
			while (j < nq && q[j].end <= g->ts)
				j++; /* the windows that ended before it */
			if (j == nq)
				break;
			if (q[j].ts >= g->end)
				continue; /* no window overlaps it */
			if (array__grow((void **)&s, n + 1, &cap, sizeof(*s)))
				goto nomem;
			s[n++] = (struct step){ g->ts, on, ready };
			s[n++] = (struct step){ g->end, -on, -ready };
		}
	}
	free(q);
	if (merge_runs(s, n, sizeof(*s), runs, nruns))
		goto nomem;
	free(runs);
	for (size_t i = 1; i < n; i++) { /* deltas to levels */
		s[i].busy += s[i - 1].busy;
		s[i].want += s[i - 1].want;
	}
	*out = s;
	*nout = n;
	return 0;
nomem:
	free(q);
	free(s);
	free(runs);
	return -ENOMEM;
}

/* Of [A, B): the time the job's threads held every CPU, returned; DEMAND adds up the job's
 * threads on a CPU or wanting one, times the time. */
static __u64 own_time(const struct step *s, size_t n, __u64 a, __u64 b, __u32 cpus, double *demand)
{
	size_t lo = 0, hi = n, i;
	__s32 busy = 0, want = 0;
	__u64 own = 0, t = a;

	while (lo < hi) { /* the first step after A */
		size_t mid = (lo + hi) / 2;

		if (s[mid].ts <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	if (i) {
		busy = s[i - 1].busy;
		want = s[i - 1].want;
	}
	while (t < b) {
		__u64 e = i < n && s[i].ts < b ? s[i].ts : b;

		if (e > t) {
			if (busy >= (__s32)cpus)
				own += e - t;
			*demand += (double)(e - t) * (busy + want);
		}
		t = e;
		for (; i < n && s[i].ts <= t; i++) {
			busy = s[i].busy;
			want = s[i].want;
		}
	}
	return own;
}

/*
 * Segment G of T, ready to run in an idle class C (a poll that yields its CPU, ledger.c's
 * ledger__ready_class): the class's entry's, made where the poll had no time of its own yet.
 */
static int add_idle(struct lthread *t, const struct lseg *g, const struct lclass *c)
{
	struct ledger_entry *e = NULL;

	for (size_t i = t->ne; i-- > 0 && !e;)
		if (t->e[i].cls == g->cls && t->e[i].kind == LEDGER_IDLE)
			e = &t->e[i];
	if (!e) {
		e = realloc(t->e, (t->ne + 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		t->e = e;
		e = &t->e[t->ne++];
		*e = (struct ledger_entry){ .kind = LEDGER_IDLE,
					    .what = c->what,
					    .where = c->where,
					    .idle = 1,
					    .own = c->own,
					    .inside = c->inside,
					    .cls = g->cls };
	}
	e->ns += g->end - g->ts;
	e->runnable_ns += g->end - g->ts;
	return 0;
}

/* A thread's time ready to run outside any wait, an entry per place: who had the CPUs. */
static int add_runnable(struct ledger *l, struct lthread *t, const struct step *s, size_t n,
			__u32 cpus, double *demand, __u64 *ready)
{
	struct hmap *at = hmap__new(sizeof(size_t)); /* {class} -> its entry + 1 */
	struct ledger_entry *e;
	size_t *j;

	if (!at)
		return -ENOMEM;
	for (size_t k = 0; k < t->nseg; k++) {
		const struct lseg *g = &t->seg[k];
		const struct lclass *c;

		if (g->state != LSTATE_RUNNABLE || g->cls == LCLASS_NONE)
			continue;
		c = &l->cls[g->cls];
		if (c->kind == LEDGER_IDLE) { /* a poll's yield: the poll's, by design */
			if (add_idle(t, g, c))
				goto nomem;
			continue;
		}
		if (c->kind != LEDGER_RUNNABLE)
			continue;
		if (!(j = hmap__get(at, (struct hkey){ g->cls, 0 }, 1)))
			goto nomem;
		if (!*j) {
			e = realloc(t->e, (t->ne + 1) * sizeof(*e));
			if (!e)
				goto nomem;
			t->e = e;
			e[t->ne++] = (struct ledger_entry){ .kind = LEDGER_RUNNABLE,
							    .what = c->what,
							    .where = c->where,
							    .inside = c->inside,
							    .own = c->own,
							    .cls = g->cls };
			*j = t->ne;
		}
		e = &t->e[*j - 1];
		e->ns += g->end - g->ts;
		e->runnable_ns += g->end - g->ts;
		e->own_ns += own_time(s, n, g->ts, g->end, cpus, demand);
		*ready += g->end - g->ts;
	}
	hmap__free(at);
	return 0;
nomem:
	hmap__free(at);
	return -ENOMEM;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct ledger_entry *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

/* For each entry of T: the thread that ended most of its blocked time, and where it was. */
static const struct lthread *thread_of(const struct ledger *l, __u32 pid, __u32 tid)
{
	const size_t *ix = hmap__get(l->threads, (struct hkey){ pid, tid }, 0);

	return ix ? &l->thr[*ix - 1] : NULL;
}

/* Thread TID's process, a waker's: a thread of PID's own first, else any traced (0: none). */
static __u32 pid_of(struct ledger *l, __u32 pid, __u32 tid)
{
	const __u32 *p;

	if (thread_of(l, pid, tid))
		return pid;
	if (l->tid_pid_n != l->nthr) { /* made, or made again: there are more threads (top) */
		hmap__free(l->tid_pid);
		l->tid_pid = hmap__new(sizeof(__u32));
		l->tid_pid_n = l->tid_pid ? l->nthr : 0;
		for (size_t i = 0; l->tid_pid && i < l->nthr; i++) {
			__u32 *v = hmap__get(l->tid_pid, (struct hkey){ l->thr[i].tid, 0 }, 1);

			if (v)
				*v = l->thr[i].pid;
		}
	}
	p = l->tid_pid ? hmap__get(l->tid_pid, (struct hkey){ tid, 0 }, 0) : NULL;
	return p ? *p : 0;
}

#define SAMPLE_NEAR 50000000ull /* a sample this close before a moment says where it was */

/*
 * Where thread W was just before TS (what the thread it woke waited for it to finish): its
 * last CPU sample if near, else its last wait's place.
 */
static const char *where_before(struct ledger *l, const struct lthread *w, __u64 ts)
{
	size_t lo = 0, hi = w->nsa;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->sa[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && w->sa[lo - 1].ts + SAMPLE_NEAR >= ts) {
		__u32 c = ledger__class_of_sample(l, &w->sa[lo - 1]);

		if (c != LCLASS_NONE && *l->cls[c].where)
			return l->cls[c].where;
	}
	lo = 0;
	hi = w->nseg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->seg[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;)
		if (w->seg[i].state != LSTATE_RUNNABLE && w->seg[i].cls != LCLASS_NONE)
			return l->cls[w->seg[i].cls].where;
	return "";
}

/*
 * For each entry of T: the thread that ended most of its blocked time, and where that thread
 * most often was, by time, as it did (the code the waiters waited for: a lock's holder's). One
 * pass over T's waits for the wakers, one for their places.
 */
static void wakers(struct ledger *l, struct lthread *t)
{
	struct hmap *by = hmap__new(sizeof(__u64));	    /* {class, waker} -> ns */
	struct hmap *best = hmap__new(sizeof(struct hkey)); /* {class} -> {waker, ns} */
	struct hmap *at = hmap__new(sizeof(__u64));	    /* {class, where} -> ns */
	struct hmap *top = hmap__new(sizeof(struct hkey));  /* {class} -> {where, ns} */
	struct hkey key, *b;
	__u64 *v;
	size_t it = 0;

	if (!by || !best || !at || !top)
		goto out;
	for (size_t k = 0; k < t->nwaits; k++)
		if ((v = hmap__get(by, (struct hkey){ t->waits[k].cls, t->waits[k].waker }, 1)))
			*v += t->waits[k].ns;
	while ((v = hmap__next(by, &it, &key)))
		if ((b = hmap__get(best, (struct hkey){ key.a, 0 }, 1)) && *v > b->b)
			*b = (struct hkey){ key.b, *v };
	for (size_t k = 0; k < t->nwaits; k++) {
		const struct lwait *w = &t->waits[k];
		const struct hkey *bw = hmap__get(best, (struct hkey){ w->cls, 0 }, 0);
		const struct lthread *wt;
		const char *where;

		/*
		 * Its timeline built first, as a report's pass builds every thread's: its samples
		 * in order and its segments, else a verdict found another place than the report
		 * rows shipped to ClickHouse said (a waker's unsorted samples, no segments).
		 */
		if (!bw || bw->a != w->waker ||
		    !(wt = thread_of(l, pid_of(l, t->pid, w->waker), w->waker)) ||
		    ledger__build_thread(l, (struct lthread *)wt))
			continue;
		where = where_before(l, wt, w->in);
		if (*where &&
		    (v = hmap__get(at, (struct hkey){ w->cls, (__u64)(uintptr_t)where }, 1)))
			*v += w->ns;
	}
	it = 0;
	/* a tie goes to the first place by name: the map's order is its strings' addresses' */
	while ((v = hmap__next(at, &it, &key)))
		if ((b = hmap__get(top, (struct hkey){ key.a, 0 }, 1)) &&
		    (*v > b->b ||
		     (*v == b->b && b->a &&
		      strcmp((const char *)(uintptr_t)key.b, (const char *)(uintptr_t)b->a) < 0)))
			*b = (struct hkey){ key.b, *v };
	for (size_t i = 0; i < t->ne; i++) {
		struct ledger_entry *e = &t->e[i];
		const struct hkey *bw, *tw;

		if (e->kind == LEDGER_RUNNABLE || e->kind == LEDGER_CODE || e->kind == LEDGER_CPU ||
		    !(bw = hmap__get(best, (struct hkey){ e->cls, 0 }, 0)))
			continue;
		e->waker = (__u32)bw->a;
		e->waker_pid = pid_of(l, t->pid, e->waker);
		e->waker_ns = bw->b;
		tw = hmap__get(top, (struct hkey){ e->cls, 0 }, 0);
		e->waker_where = tw ? (const char *)(uintptr_t)tw->a : "";
	}
out:
	hmap__free(by);
	hmap__free(best);
	hmap__free(at);
	hmap__free(top);
}

/* The unit's entries: its thread's, or its pool's summed by what and where. */
static int unit_entries(struct ledger *l, const struct cand *c, const char *st)
{
	struct ledger_entry *u = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < l->nthr; i++) {
		const struct lthread *t = &l->thr[i];
		const char *name = trace_model__thread_name(l->m, t->tid);
		char s[96];

		if (t->pid != c->pid || !t->total)
			continue;
		if (c->main || c->n == 1) {
			if (t->tid != c->tid)
				continue;
		} else {
			stem(name && *name ? name : "thread", s, sizeof(s));
			if (t->tid == t->pid || strcmp(s, st))
				continue;
		}
		l->unit.total_ns += t->total;
		for (size_t k = 0; k < t->ne; k++) {
			const struct ledger_entry *e = &t->e[k];
			size_t j;

			for (j = 0; j < n; j++)
				if (u[j].kind == e->kind && u[j].what == e->what &&
				    u[j].where == e->where && u[j].inside == e->inside)
					break;
			if (j == n) {
				if (array__grow((void **)&u, n, &cap, sizeof(*u))) {
					free(u);
					return -ENOMEM;
				}
				u[n++] = *e;
				continue;
			}
			u[j].ns += e->ns;
			u[j].oncpu_ns += e->oncpu_ns;
			u[j].runnable_ns += e->runnable_ns;
			u[j].own_ns += e->own_ns;
			if (e->waker_ns > u[j].waker_ns) {
				u[j].waker = e->waker;
				u[j].waker_pid = e->waker_pid;
				u[j].waker_ns = e->waker_ns;
				u[j].waker_where = e->waker_where;
			}
		}
	}
	if (u)
		qsort(u, n, sizeof(*u), entry_cmp);
	l->unit_e = u;
	l->unit_ne = n;
	return 0;
}

void ledger__finish_thread(struct ledger *l, struct lthread *t)
{
	double d = 0;
	__u64 r = 0;

	if (add_runnable(l, t, NULL, 0, 1, &d, &r))
		return; /* out of memory: its wait for a CPU not in its entries */
	if (t->ne)
		qsort(t->e, t->ne, sizeof(*t->e), entry_cmp);
	wakers(l, t);
}

int ledger__units(struct ledger *l)
{
	struct cand best;
	struct hmap *seen_cpus;
	struct step *s = NULL;
	char *in_job = NULL;
	size_t n = 0;
	__u32 root, cpus = 0;
	double demand = 0;
	__u64 ready = 0, top = 0;
	struct hkey key;
	size_t it = 0;
	int err;

	err = l->timeline ? pick(l, &best, &top) : -ENOENT;
	if (err)
		return err == -ENOENT ? 0 : err;
	for (size_t i = 0; i < l->nthr; i++) /* the unit's process: its entries, its waker's */
		if (l->thr[i].pid == best.pid && (err = ledger__build_thread(l, &l->thr[i])))
			return err;
	in_job = calloc(l->nthr + 1, 1);
	if (!in_job)
		return -ENOMEM;
	root = root_of(l, best.pid);
	for (size_t i = 0; i < l->nthr; i++)
		in_job[i] = root_of(l, l->thr[i].pid) == root;
	seen_cpus = hmap__new(1);
	if (!seen_cpus) {
		free(in_job);
		return -ENOMEM;
	}
	while (hmap__next(l->cpus, &it, &key)) /* the CPUs the job's processes were on */
		for (size_t i = 0; i < l->nthr; i++)
			if (in_job[i] && l->thr[i].pid == key.a) {
				if (!hmap__get(seen_cpus, (struct hkey){ key.b, 0 }, 0) &&
				    hmap__get(seen_cpus, (struct hkey){ key.b, 0 }, 1))
					cpus++;
				break;
			}
	hmap__free(seen_cpus);
	if (!cpus)
		cpus = 1;
	/* who had the CPUs: the job's threads as steps, for the unit's process's threads */
	err = job_steps(l, in_job, best.pid, &s, &n);
	for (size_t i = 0; !err && i < l->nthr; i++) {
		struct lthread *t = &l->thr[i];
		double d = 0;
		__u64 r = 0;

		if (!t->built)
			continue;
		err = add_runnable(l, t, t->pid == best.pid ? s : NULL, t->pid == best.pid ? n : 0,
				   cpus, &d, &r);
		if (t->pid == best.pid) { /* the unit's demand: its own process's threads */
			demand += d;
			ready += r;
		}
		if (!err && t->ne)
			qsort(t->e, t->ne, sizeof(*t->e), entry_cmp);
		if (!err)
			wakers(l, t);
	}
	free(s);
	free(in_job);
	if (err)
		return err;
	l->finished = 1; /* a thread built from now on gets its wait for a CPU as it is built */
	memset(&l->unit, 0, sizeof(l->unit));
	l->unit.pid = best.pid;
	l->unit.tid = best.tid;
	l->unit.nthreads = best.main ? 1 : best.n;
	l->unit.cpus = cpus;
	l->unit.score = top;
	l->unit.job_threads = ready ? (__u32)(demand / (double)ready + 0.5) : 0;
	if (l->unit.nthreads > 1) {
		char first[64] = "", last[64] = "";
		__u32 lo = ~0u, hi = 0;

		for (size_t i = 0; i < l->nthr; i++) {
			const struct lthread *t = &l->thr[i];
			const char *name = trace_model__thread_name(l->m, t->tid);
			char st[96];

			stem(name && *name ? name : "thread", st, sizeof(st));
			if (t->pid != best.pid || t->tid == t->pid || strcmp(st, best.stem) ||
			    !t->total)
				continue;
			if (t->tid < lo) {
				lo = t->tid;
				snprintf(first, sizeof(first), "%s", name ? name : "thread");
			}
			if (t->tid >= hi) {
				hi = t->tid;
				snprintf(last, sizeof(last), "%s", name ? name : "thread");
			}
		}
		snprintf(l->unit.name, sizeof(l->unit.name), "%s..%s", first, last);
	} else {
		const char *name = trace_model__thread_name(l->m, best.tid);

		snprintf(l->unit.name, sizeof(l->unit.name), "%s", name && *name ? name : "thread");
	}
	err = unit_entries(l, &best, best.stem);
	l->has_unit = !err;
	return err;
}
