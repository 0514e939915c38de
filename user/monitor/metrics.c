// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The record stream folded into counters and histograms (metrics.h). Records are the ones a
 * trace file would get, so in-kernel aggregates arrive as cumulative snapshots (osrt's
 * SYSCALL_AGG, gil's GIL_AGG), which the families turn into increments per thread. What is
 * counted is each family's (struct family.metrics, metrics_family.h); this file keeps the
 * owners of series, the losses and the records read.
 *
 * Cardinality: at most top_n processes own series; the events of the others go to one
 * pid="other" series. Ownership changes only by whole series, never by moving counts, so
 * every series is monotonic: a process that loses its series stops adding to it (the series
 * goes away), its later events count as "other", and if it wins series again they continue
 * where they stopped. A pid reused by a new process starts a new entry (zeroed counters).
 *
 * Slots go to what runs: an exited process gives its slot back at once (its series stay for
 * the grace, at most top_n of them, the oldest going first), and an owner idle for a whole
 * rebalance window gives its slot to the first process with events that finds none free, so
 * a job's new process waits neither behind exited one-shot processes nor idle ones. Restarts: a process that starts with the job and
 * role of an exited one (metrics_ident.h; a worker's role is its parent's fork order) takes
 * its series over, and its slot when one is free: the counters go on from where the exited
 * one stopped, under the new pid, and the exited one's series end then.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics_state.h"
#include "hmap.h"

/* 1-2.5-5 per decade, from 1 us to 10 s: the bounds of every duration histogram. */
static const __u64 std_bounds_ns[] = {
	1000,	   2500,      5000,	  10000,      25000,	  50000,       100000,	 250000,
	500000,	   1000000,   2500000,	  5000000,    10000000,	  25000000,    50000000, 100000000,
	250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

void m_bounds__init(struct m_bounds *b, __u64 floor_ns)
{
	b->n = 0;
	if (floor_ns)
		b->ns[b->n++] = floor_ns;
	for (size_t i = 0; i < sizeof(std_bounds_ns) / sizeof(std_bounds_ns[0]); i++)
		if (std_bounds_ns[i] > floor_ns && b->n < M_MAX_BOUNDS)
			b->ns[b->n++] = std_bounds_ns[i];
}

void m_hist__add(struct m_hist *h, const struct m_bounds *b, __u64 dur, __u64 n, __u64 sum)
{
	__u32 i = 0;

	while (i < b->n && dur > b->ns[i])
		i++;
	h->bucket[i] += n;
	h->count += n;
	h->sum_ns += sum;
}

void *m_map__at(struct hmap **h, size_t elem, struct hkey k)
{
	if (!*h && !(*h = hmap__new(elem)))
		return NULL;
	return hmap__get(*h, k, 1);
}

struct m_count m_count__delta(struct hmap *last, struct hkey key, __u64 count, __u64 total)
{
	struct m_count *l = hmap__get(last, key, 1), d = { count, total };

	if (!l)
		return d;
	if (count >= l->count && total >= l->total_ns) {
		d.count = count - l->count;
		d.total_ns = total - l->total_ns;
	}
	l->count = count;
	l->total_ns = total;
	return d;
}

static void series_free(struct metrics_series *s)
{
	for_each_family_slot(fit, s->fam) {
		if (!*fit.slot)
			continue;
		if (fit.f->metrics->series_free)
			fit.f->metrics->series_free(*fit.slot);
		free(*fit.slot);
	}
	memset(s, 0, sizeof(*s));
}

struct metrics *metrics__new(const struct metrics_opts *mo, const struct record_opts *o)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->o = *mo;
	pthread_mutex_init(&m->lock, NULL);
	m->procs = hmap__new(sizeof(struct metrics_proc));
	if (!m->procs)
		goto fail;
	for_each_family_slot(fit, m->states) {
		const struct metrics_family *mf = fit.f->metrics;

		if (mf && mf->open && mf->open(o, fit.slot))
			goto fail;
	}
	return m;
fail:
	metrics__free(m);
	return NULL;
}

void metrics__free(struct metrics *m)
{
	struct metrics_proc *p;
	size_t it = 0;

	if (!m)
		return;
	while (m->procs && (p = hmap__next(m->procs, &it, NULL)))
		series_free(&p->s);
	series_free(&m->other);
	for_each_family_slot(fit, m->states)
		if (*fit.slot && fit.f->metrics->free)
			fit.f->metrics->free(*fit.slot);
	hmap__free(m->procs);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct metrics_proc *proc_get(struct metrics *m, __u32 pid, int create)
{
	struct metrics_proc *p = hmap__get(m->procs, (struct hkey){ pid, 0 }, create);

	if (p && !p->pid)
		p->pid = pid;
	return p;
}

static void proc_drop(struct metrics *m, __u32 pid)
{
	struct metrics_proc *p = proc_get(m, pid, 0);

	if (!p)
		return;
	if (p->owned && p->dead_at)
		m->ndead_owned--;
	else if (p->owned)
		m->nowned--;
	series_free(&p->s);
	hmap__del(m->procs, (struct hkey){ pid, 0 });
}

/*
 * Every slot is taken and P, alive, has events: the owner idle longest, with no event for a
 * whole rebalance window and none since, gives P its slot now (not at the next rebalance: a
 * job's new process would count under "other" meanwhile).
 */
static void take_idle_slot(struct metrics *m, struct metrics_proc *p)
{
	struct metrics_proc *q, *idle = NULL;
	size_t it = 0;

	while ((q = hmap__next(m->procs, &it, NULL)))
		if (q->owned && !q->dead_at && q->idle && !q->activity &&
		    (!idle || q->idle > idle->idle))
			idle = q;
	if (!idle)
		return;
	idle->owned = 0;
	p->owned = 1;
}

/*
 * The series the events of PID go to, counting them as its activity: its own, or "other"
 * when top_n processes own series already. A process seen for the first time (no PROCESS or
 * FORK record: pid 0 records, threads of processes that started before) gets an entry here.
 */
static struct metrics_series *series_of(struct metrics *m, __u32 pid, __u64 events)
{
	struct metrics_proc *p = pid ? proc_get(m, pid, 1) : NULL;

	if (!p)
		return &m->other;
	p->activity += events;
	if (!p->owned && !p->dead_at && m->nowned < m->o.top_n) {
		p->owned = 1;
		m->nowned++;
	} else if (!p->owned && !p->dead_at && p->asked != m->last_rebalance) {
		p->asked = m->last_rebalance; /* one look per window: not at every event */
		take_idle_slot(m, p);
	}
	return p->owned ? &p->s : &m->other;
}

static int family_slot(const struct family *f)
{
	for_each_family(fit)
		if (fit.f == f)
			return fit.i;
	return -1;
}

/* F's counters in S, made (zeroed) on first use. */
static void *counters(struct metrics_series *s, const struct family *f)
{
	int i = family_slot(f);

	if (i < 0 || !f->metrics || !f->metrics->series_size)
		return NULL;
	if (!s->fam[i])
		s->fam[i] = calloc(1, f->metrics->series_size);
	return s->fam[i];
}

void *metrics__series(struct metrics *m, const struct family *f, __u32 pid, __u64 events)
{
	return counters(series_of(m, pid, events), f);
}

void *metrics__proc_series(struct metrics *m, const struct family *f, __u32 pid)
{
	struct metrics_proc *p = pid ? proc_get(m, pid, 1) : NULL;

	return p ? counters(&p->s, f) : NULL;
}

void *metrics_owner__series(const struct metrics_owner *o, const struct family *f)
{
	int i = family_slot(f);

	return i < 0 ? NULL : o->s->fam[i];
}

/* P exited at AT: its slot is free now, its series go when its grace ends (housekeep). */
static void set_dead(struct metrics *m, struct metrics_proc *p, __u64 at)
{
	p->dead_at = at;
	if (p->owned) {
		m->nowned--;
		m->ndead_owned++;
	}
	if (!m->grace_end || at + m->o.grace_ns < m->grace_end)
		m->grace_end = at + m->o.grace_ns;
}

static void on_exit_rec(struct metrics *m, const struct bs_exit *r)
{
	struct metrics_proc *p;

	if (r->group_dead && (p = proc_get(m, r->h.pid, 0)))
		set_dead(m, p, r->h.ts ? r->h.ts : 1);
}

static void set_comm(struct metrics *m, __u32 pid, const char *comm)
{
	struct metrics_proc *p = proc_get(m, pid, 1);

	if (p)
		memcpy(p->comm, comm, BS_COMM_LEN);
}

static int series_empty(const struct metrics_series *s)
{
	for (int i = 0; i < FAMILY_MAX; i++)
		if (s->fam[i])
			return 0;
	return 1;
}

/*
 * A restart: P, new, has the job and role of an exited process with series (the last to
 * exit): P takes them over, and their slot when one is free. What P counted before (between
 * a fork and its exec, under its parent's job) goes: its labels change at the exec anyway.
 */
/*
 * torch (2.1+) names its DataLoader's worker processes so (torch.utils.data's _worker_loop,
 * PR_SET_NAME) as each begins: a forked worker so named is its trainer's DataLoader worker.
 */
#define DATALOADER_COMM "pt_data_worker"
#define DATALOADER	"DataLoader "

/*
 * A previous run's ROLE goes on in NEW's: the same, or NEW is "worker N" (a fork not named
 * yet, "rank 1 worker N") and it was that worker of a DataLoader, as NEW will be in a moment.
 */
static int same_role(const char *role, const char *new)
{
	const char *w = strstr(role, DATALOADER "worker ");
	size_t pre = w ? (size_t)(w - role) : 0;

	return !strcmp(role, new) ||
	       (w && !strncmp(role, new, pre) && !strcmp(w + strlen(DATALOADER), new + pre));
}

/* P, a worker of its parent ("worker N"), named as torch names a DataLoader's: it is one. */
static void name_dataloader_worker(struct metrics_proc *p)
{
	char r[M_ROLE_LEN];
	const char *w = strstr(p->id.role, "worker ");

	if (!p->forked || strcmp(p->comm, DATALOADER_COMM) || !w ||
	    strstr(p->id.role, DATALOADER "worker "))
		return;
	if (snprintf(r, sizeof(r), "%.*s" DATALOADER "%s", (int)(w - p->id.role), p->id.role, w) <
	    (int)sizeof(r))
		memcpy(p->id.role, r, sizeof(r));
}

static void continue_series(struct metrics *m, struct metrics_proc *p)
{
	struct metrics_proc *q, *prev = NULL;
	size_t it = 0;

	if (!p->id.job[0] || p->dead_at)
		return;
	while ((q = hmap__next(m->procs, &it, NULL)))
		if (q != p && q->dead_at && !series_empty(&q->s) && !strcmp(q->id.job, p->id.job) &&
		    same_role(q->id.role, p->id.role) && (!prev || q->dead_at > prev->dead_at))
			prev = q;
	if (!prev)
		return;
	/* its role's name too: a DataLoader's worker N, before it names itself */
	memcpy(p->id.role, prev->id.role, sizeof(p->id.role));
	series_free(&p->s);
	p->s = prev->s;
	memset(&prev->s, 0, sizeof(prev->s));
	if (!p->owned && prev->owned && m->nowned < m->o.top_n) {
		p->owned = 1;
		m->nowned++;
	}
	proc_drop(m, prev->pid); /* P may have moved: the map may grow no more here */
}

/* P's role as its parent PP's worker: "worker N", N its fork order ("rank 1 worker N"). */
static void set_worker(struct metrics_proc *p, struct metrics_proc *pp)
{
	char r[M_ROLE_LEN];
	int is_main = !strcmp(pp->id.role, "main");

	memcpy(r, pp->id.role, sizeof(r)); /* P's role may be PP's (a fork copies it) */
	/* "rank 1" at most 16 bytes: a role of its parent's always fits */
	if (snprintf(p->id.role, sizeof(p->id.role), "%s%sworker %u", is_main ? "" : r,
		     is_main ? "" : " ", pp->nforks++) >= (int)sizeof(p->id.role))
		p->id.role[sizeof(p->id.role) - 1] = 0;
}

/*
 * PID's job and role, read now that it started (PPID: its parent, 0 if not known): a process
 * gone before it could be read is its name's job. A child with its parent's job and role (a
 * worker the monitor found running, forked before it started) is the parent's worker.
 */
static void identify(struct metrics *m, __u32 pid, __u32 ppid)
{
	struct metrics_proc *p = proc_get(m, pid, 1), *pp;
	struct metrics_ident id;

	if (!p || !m->o.ident || p->forked || (ppid && p->id.job[0]))
		return; /* a PROCESS record after its EXEC's: read then */
	if (m->o.ident(pid, &id, m->o.ident_arg)) {
		memset(&id, 0, sizeof(id));
		snprintf(id.job, sizeof(id.job), "%s", p->comm);
		snprintf(id.role, sizeof(id.role), "main");
	}
	p->id = id;
	if (ppid && ppid != pid && (pp = proc_get(m, ppid, 0)) && !pp->dead_at &&
	    !strcmp(pp->id.job, id.job) && !strcmp(pp->id.role, id.role))
		set_worker(p, pp);
	continue_series(m, p);
}

/* A new process under PID: a recycled pid continues nothing of the process it was before. */
static void on_fork(struct metrics *m, const struct bs_fork *r)
{
	struct metrics_proc *p, *pp;
	struct metrics_ident id = {};

	if (r->child_pid != r->child_tid)
		return; /* a thread */
	proc_drop(m, r->child_pid);
	set_comm(m, r->child_pid, r->comm);
	if ((p = proc_get(m, r->child_pid, 0)))
		p->born = r->h.ts;
	pp = m->o.ident ? proc_get(m, r->h.pid, 0) : NULL;
	if (!pp || !pp->id.job[0] || !(p = proc_get(m, r->child_pid, 1)))
		return;
	/* Its parent's job, its worker until it execs (a DataLoader's worker N). */
	id = pp->id;
	p->id = id;
	set_worker(p, pp);
	p->forked = 1;
	continue_series(m, p);
}

static void on_exec(struct metrics *m, const struct bs_exec *r)
{
	struct metrics_proc *p = proc_get(m, r->h.pid, 1);

	set_comm(m, r->h.pid, r->comm);
	if (p) {
		p->forked = 0;
		memset(&p->id, 0, sizeof(p->id));
	}
	identify(m, r->h.pid, 0);
}

/* The exited processes whose grace period has ended go; GRACE_END is the next one's. */
static void drop_graced(struct metrics *m)
{
	struct metrics_proc *p;
	__u32 dead[256];
	int ndead = 0;
	size_t it;

	do {
		ndead = 0;
		it = 0;
		m->grace_end = 0;
		while ((p = hmap__next(m->procs, &it, NULL)) && ndead < 256) {
			if (!p->dead_at)
				continue;
			if (m->now > p->dead_at + m->o.grace_ns)
				dead[ndead++] = p->pid;
			else if (!m->grace_end || p->dead_at + m->o.grace_ns < m->grace_end)
				m->grace_end = p->dead_at + m->o.grace_ns;
		}
		for (int i = 0; i < ndead; i++)
			proc_drop(m, dead[i]);
	} while (ndead == 256);
}

/* How long P lived: a one-shot process's milliseconds, a job's seconds (~0: not known). */
static __u64 lifetime(const struct metrics_proc *p)
{
	return p->born && p->dead_at >= p->born ? p->dead_at - p->born : ~0ull;
}

/*
 * At most top_n exited processes keep series for the grace. The one that lived shortest goes
 * first (of those, the first to exit): a machine's one-shot
 * processes (a build's compilers, `sleep`, `cat`) never push out a job's exited trainer, whose
 * restart goes on in its series (a build beside a restarted torch trainer ended them, its
 * workers' too, before the restart).
 */
static void cap_dead(struct metrics *m)
{
	struct metrics_proc *p, *first;
	size_t it;

	while (m->ndead_owned > m->o.top_n) {
		first = NULL;
		it = 0;
		while ((p = hmap__next(m->procs, &it, NULL)))
			if (p->owned && p->dead_at &&
			    (!first || lifetime(p) < lifetime(first) ||
			     (lifetime(p) == lifetime(first) && p->dead_at < first->dead_at)))
				first = p;
		if (!first)
			break;
		proc_drop(m, first->pid);
	}
}

/*
 * Every REBALANCE_NS: while the busiest process without series had more than twice the
 * events of the quietest owner (and a margin, so that noise does not swap them), they swap.
 */
static void rebalance(struct metrics *m)
{
	struct metrics_proc *p, *lo, *hi;
	size_t it;

	for (__u32 round = 0; round < m->o.top_n; round++) {
		lo = hi = NULL;
		it = 0;
		while ((p = hmap__next(m->procs, &it, NULL))) {
			if (p->dead_at)
				continue;
			if (p->owned && (!lo || p->activity < lo->activity))
				lo = p;
			if (!p->owned && (!hi || p->activity > hi->activity))
				hi = p;
		}
		if (!hi || !hi->activity)
			break;
		if (m->nowned < m->o.top_n) {
			hi->owned = 1;
			m->nowned++;
		} else if (lo && hi->activity > 2 * lo->activity + 100) {
			lo->owned = 0;
			hi->owned = 1;
		} else {
			break;
		}
		hi->activity = 0;      /* counted once per round */
		hi->idle = UINT32_MAX; /* it had events: not idle (below) */
	}
	/* An exit can be missed (it raced the snapshot at the start): ask the kernel. */
	it = 0;
	while ((p = hmap__next(m->procs, &it, NULL))) {
		if (!p->activity && !p->dead_at && kill(p->pid, 0) && errno == ESRCH)
			set_dead(m, p, m->now);
		p->idle = p->activity || p->idle == UINT32_MAX ? 0 : p->idle + 1;
		p->activity = 0;
	}
}

void metrics__housekeep(struct metrics *m, __u64 now)
{
	if (now > m->now)
		m->now = now;
	if (!m->last_rebalance) /* the first window starts with the first record */
		m->last_rebalance = m->now;
	/* At the grace's end, not at the next rebalance: --exit-grace is what a user waits. */
	if (m->grace_end && m->now > m->grace_end)
		drop_graced(m);
	if (m->ndead_owned > m->o.top_n)
		cap_dead(m);
	if (m->now >= m->last_rebalance + m->o.rebalance_ns) {
		m->last_rebalance = m->now;
		rebalance(m);
	}
}

void metrics__record(void *arg, const struct bs_hdr *h)
{
	struct metrics *m = arg;

	pthread_mutex_lock(&m->lock);
	m->records++;
	if (h->ts > m->now)
		m->now = h->ts;
	switch (h->type) {
	case BS_REC_LOSS: {
		const struct bs_loss *l = (const void *)h;

		const struct family *f = loss__family(l);

		if (l->cause < BS_LOSS_MAX && loss__family_block(f) >= 0)
			m->lost[loss__key(f, l->cause)] += l->count;
		else if (l->cause < BS_LOSS_MAX)
			m->lost_all[l->cause] += l->count;
		break;
	}
	case BS_REC_PROCESS:
		set_comm(m, h->pid, ((const struct bs_process *)h)->comm);
		identify(m, h->pid, ((const struct bs_process *)h)->ppid);
		break;
	case BS_REC_FORK:
		on_fork(m, (const void *)h);
		break;
	case BS_REC_EXEC:
		on_exec(m, (const void *)h);
		break;
	case BS_REC_COMM:
		if (h->pid == h->tid) { /* the process's name is its main thread's */
			struct metrics_proc *p;

			set_comm(m, h->pid, ((const struct bs_comm *)h)->comm);
			if ((p = proc_get(m, h->pid, 0)))
				name_dataloader_worker(p);
		}
		break;
	case BS_REC_EXIT:
		on_exit_rec(m, (const void *)h);
		break;
	}
	for_each_family_slot(fit, m->states)
		if (fit.f->metrics && fit.f->metrics->record)
			fit.f->metrics->record(m, *fit.slot, h);
	metrics__housekeep(m, 0);
	pthread_mutex_unlock(&m->lock);
}
