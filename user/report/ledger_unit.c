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
 * its time: a trainer, a main loop fanning work out) or is nearly as weighty; never a process
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

/* One piece of a unit's engaged time: [ts, end), BUSY on a CPU or wanting one, else a wait. */
struct span {
	__u64 ts, end;
	int busy;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

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
	__u64 busy, all;

	for (size_t k = 0; k < n; k++) {
		const struct lthread *t = &l->thr[ix[k]];

		for (size_t j = 0; !t->throughout && j < t->nseg; j++) {
			int e = engages(l, t, &t->seg[j]);

			if (!e)
				continue;
			if (array__grow((void **)&s, ns, &cap, sizeof(*s))) {
				free(s);
				return 0;
			}
			s[ns++] = (struct span){ t->seg[j].ts, t->seg[j].end, e == 1 };
		}
	}
	qsort(s, ns, sizeof(*s), span_cmp);
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

static int pick(const struct ledger *l, struct cand *best)
{
	struct cand *c = NULL, *b = NULL;
	size_t nc = 0, cc = 0;

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
	for (size_t k = 0; k < nc; k++) {
		c[k].score = score_of(l, c[k].ix, c[k].n);
		if (!b || better(&c[k], b))
			b = &c[k];
	}
	/*
	 * Its process's main thread carries the progress when it drives (engaged half its time:
	 * a trainer waiting for the GIL its helper holds, a loop fanning work out to a pool) or
	 * is nearly as engaged as the best.
	 */
	for (size_t k = 0; b && k < nc; k++)
		if (c[k].main && c[k].pid == b->pid && !b->main && c[k].score &&
		    ((double)c[k].score >= MAIN_BUSY * (double)c[k].total ||
		     (double)c[k].score >= MAIN_FIRST * (double)b->score))
			b = &c[k];
	if (b) {
		*best = *b;
		best->ix = NULL;
	}
	free_cands(c, nc);
	return b && best->score ? 0 : -ENOENT;
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

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The job's threads on a CPU and wanting one, as steps over time (summed from deltas). */
static int job_steps(const struct ledger *l, const char *in_job, struct step **out, size_t *nout)
{
	struct step *s = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < l->nthr; i++) {
		const struct lthread *t = &l->thr[i];

		if (!in_job[i])
			continue;
		for (size_t k = 0; k < t->nseg; k++) {
			const struct lseg *g = &t->seg[k];
			int on = g->state == LSTATE_ONCPU, ready = g->state == LSTATE_RUNNABLE;

			if (!on && !ready)
				continue;
			if (array__grow((void **)&s, n + 1, &cap, sizeof(*s))) {
				free(s);
				return -ENOMEM;
			}
			s[n++] = (struct step){ g->ts, on, ready };
			s[n++] = (struct step){ g->end, -on, -ready };
		}
	}
	qsort(s, n, sizeof(*s), step_cmp);
	for (size_t i = 1; i < n; i++) { /* deltas to levels */
		s[i].busy += s[i - 1].busy;
		s[i].want += s[i - 1].want;
	}
	*out = s;
	*nout = n;
	return 0;
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

/* A thread's time ready to run outside any wait, an entry per place: who had the CPUs. */
static int add_runnable(struct ledger *l, struct lthread *t, const struct step *s, size_t n,
			__u32 cpus, double *demand, __u64 *ready)
{
	struct ledger_entry *e;

	for (size_t k = 0; k < t->nseg; k++) {
		const struct lseg *g = &t->seg[k];
		const struct lclass *c;
		size_t j;

		if (g->state != LSTATE_RUNNABLE || g->cls == LCLASS_NONE ||
		    (c = &l->cls[g->cls])->kind != LEDGER_RUNNABLE)
			continue;
		for (j = 0; j < t->ne; j++)
			if (t->e[j].kind == LEDGER_RUNNABLE && t->e[j].where == c->where &&
			    t->e[j].what == c->what && t->e[j].inside == c->inside)
				break;
		if (j == t->ne) {
			e = realloc(t->e, (t->ne + 1) * sizeof(*e));
			if (!e)
				return -ENOMEM;
			t->e = e;
			e[t->ne++] = (struct ledger_entry){ .kind = LEDGER_RUNNABLE,
							    .what = c->what,
							    .where = c->where,
							    .inside = c->inside };
		}
		t->e[j].ns += g->end - g->ts;
		t->e[j].runnable_ns += g->end - g->ts;
		t->e[j].own_ns += own_time(s, n, g->ts, g->end, cpus, demand);
		*ready += g->end - g->ts;
	}
	return 0;
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
 * Where waker W most often was, by time, as it ended T's waits of E's class: the code the
 * waiters waited for (a lock's holder's).
 */
static const char *most_where(struct ledger *l, const struct lthread *t,
			      const struct ledger_entry *e, const struct lthread *w)
{
	const char *best = "", *where;
	struct hmap *by;
	__u64 *v, most = 0;

	if (!w || !(by = hmap__new(sizeof(__u64))))
		return "";
	for (size_t k = 0; k < t->nwaits; k++) {
		const struct lclass *c = &l->cls[t->waits[k].cls];

		if (t->waits[k].waker != w->tid || c->what != e->what || c->where != e->where)
			continue;
		where = where_before(l, w, t->waits[k].in);
		if (!*where || !(v = hmap__get(by, (struct hkey){ (__u64)(uintptr_t)where, 0 }, 1)))
			continue;
		*v += t->waits[k].ns;
		if (*v > most) {
			most = *v;
			best = where;
		}
	}
	hmap__free(by);
	return best;
}

static void wakers(struct ledger *l, struct lthread *t)
{
	for (size_t i = 0; i < t->ne; i++) {
		struct ledger_entry *e = &t->e[i];
		struct hmap *by = NULL;
		__u64 *v, best = 0;
		__u32 who = 0;
		struct hkey key;
		size_t it = 0;

		if (e->kind == LEDGER_RUNNABLE || e->kind == LEDGER_CODE || e->kind == LEDGER_CPU)
			continue;
		by = hmap__new(sizeof(__u64));
		if (!by)
			return;
		for (size_t k = 0; k < t->nwaits; k++) {
			const struct lclass *c = &l->cls[t->waits[k].cls];

			if (c->what != e->what || c->where != e->where || c->kind != e->kind)
				continue;
			v = hmap__get(by, (struct hkey){ t->waits[k].waker, 0 }, 1);
			if (v)
				*v += t->waits[k].ns;
		}
		while ((v = hmap__next(by, &it, &key)))
			if (*v > best) {
				best = *v;
				who = (__u32)key.a;
			}
		hmap__free(by);
		if (!who)
			continue;
		e->waker = who;
		e->waker_ns = best;
		e->waker_where = most_where(l, t, e, thread_of(l, t->pid, who));
	}
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

int ledger__units(struct ledger *l)
{
	struct cand best;
	struct hmap *seen_cpus;
	struct step *s = NULL;
	char *in_job = NULL;
	size_t n = 0;
	__u32 root, cpus = 0;
	double demand = 0;
	__u64 ready = 0;
	struct hkey key;
	size_t it = 0;
	int err;

	if (!l->timeline || pick(l, &best))
		return 0;
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
	err = job_steps(l, in_job, &s, &n);
	for (size_t i = 0; !err && i < l->nthr; i++) {
		struct lthread *t = &l->thr[i];
		double d = 0;
		__u64 r = 0;

		err = add_runnable(l, t, s, n, cpus, &d, &r);
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
	memset(&l->unit, 0, sizeof(l->unit));
	l->unit.pid = best.pid;
	l->unit.tid = best.tid;
	l->unit.nthreads = best.main ? 1 : best.n;
	l->unit.cpus = cpus;
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
