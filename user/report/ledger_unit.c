// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ledger's critical unit (ledger.h): the thread, or pool of like threads, that carries the
 * job's progress; and, for time ready to run outside any wait, who had the CPUs meanwhile.
 *
 * A thread's engaged time is its time on a CPU and ready to run, and half its other waits
 * (the thread it waits on carries more), none of its waits for work by design (a pool's
 * worker waiting for its next task, Thread.join, a library's thread in epoll_wait) and none at
 * all for a thread asleep in one wait nearly throughout (a wrapper shell in wait4, a main
 * thread that only sleeps). A process's threads named alike but for their numbers ("w0".."w3",
 * "ThreadPoolExecutor-0_1", "Thread-7 (process_request_thread)") are a pool, engaged while
 * any of them is (their engaged time summed, at most the pool's life). The critical unit is
 * the most engaged, a process's main thread first where it is nearly as engaged (a main loop
 * fanning work out to a pool of intra-op threads still carries the progress); never a process
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

static int io_idle(const struct lthread *t, const struct ledger_entry *e)
{
	return idle_call(t, e->kind, e->what);
}

/*
 * How much of the job's progress a thread carries: its time on a CPU and wanting one, and
 * half its time waiting (a thread waiting on another carries less than that other), none of
 * its waits for work by design, nothing for a thread asleep nearly throughout.
 */
static __u64 engaged(const struct ledger *l, const struct lthread *t)
{
	__u64 busy = 0, waits = 0;

	if (!t->total || t->throughout)
		return 0;
	for (size_t i = 0; i < t->ne; i++) {
		const struct ledger_entry *e = &t->e[i];

		if (e->idle || io_idle(t, e))
			continue;
		busy += e->oncpu_ns + e->runnable_ns;
		/* a wait in a library's own thread, never at the job's code: waiting for work */
		if (e->own)
			waits += e->ns - e->oncpu_ns - e->runnable_ns;
	}
	for (size_t k = 0; k < t->nseg; k++) { /* ready to run: this file's entries, later */
		const struct lseg *g = &t->seg[k];
		const struct lclass *c = g->cls == LCLASS_NONE ? NULL : &l->cls[g->cls];

		if (g->state == LSTATE_RUNNABLE && !(c && idle_call(t, c->inside, c->what)))
			busy += g->end - g->ts;
	}
	return busy + waits / 2;
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
	__u64 score, sum, born, died;
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

static int pick(const struct ledger *l, struct cand *best)
{
	struct cand *c = NULL;
	size_t nc = 0, cc = 0;
	int found = 0;

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
				free(c);
				return -ENOMEM;
			}
			memset(&c[nc], 0, sizeof(c[0]));
			c[nc].pid = t->pid;
			c[nc].tid = t->tid;
			c[nc].main = t->tid == t->pid;
			snprintf(c[nc].stem, sizeof(c[nc].stem), "%s", st);
			c[nc].born = t->w0;
			nc++;
		}
		c[k].n++;
		c[k].sum += engaged(l, t);
		if (t->w0 < c[k].born)
			c[k].born = t->w0;
		if (t->w1 > c[k].died)
			c[k].died = t->w1;
		if (t->tid < c[k].tid)
			c[k].tid = t->tid;
	}
	for (size_t k = 0; k < nc; k++) {
		__u64 life = c[k].died - c[k].born;

		c[k].score = c[k].sum < life ? c[k].sum : life;
	}
	for (size_t k = 0; k < nc; k++) {
		struct cand *x = &c[k];

		if (!found || x->score > best->score ||
		    (x->score == best->score &&
		     (x->pid < best->pid || (x->pid == best->pid && x->tid < best->tid)))) {
			*best = *x;
			found = 1;
		}
	}
	/* its process's main thread, when nearly as engaged, carries the progress */
	for (size_t k = 0; found && k < nc; k++)
		if (c[k].main && c[k].pid == best->pid && !best->main &&
		    (double)c[k].score >= MAIN_FIRST * (double)best->score && c[k].score)
			*best = c[k];
	free(c);
	return found && best->score ? 0 : -ENOENT;
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
