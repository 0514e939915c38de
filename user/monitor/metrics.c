// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The record stream folded into counters and histograms (metrics.h). Records are the ones a
 * trace file would get, so in-kernel aggregates arrive as cumulative snapshots (osrt's
 * SYSCALL_AGG, gil's GIL_AGG) and are turned into increments here, per thread.
 *
 * Cardinality: at most top_n processes own series; the events of the others go to one
 * pid="other" series. Ownership changes only by whole series, never by moving counts, so
 * every series is monotonic: a process that loses its series stops adding to it (the series
 * goes away), its later events count as "other", and if it wins series again they continue
 * where they stopped. A pid reused by a new process starts a new entry (zeroed counters).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "metrics_state.h"

/* 1-2.5-5 per decade, from 1 us to 10 s: the bounds of every duration histogram. */
static const __u64 std_bounds_ns[] = {
	1000,	   2500,      5000,	  10000,      25000,	  50000,       100000,	 250000,
	500000,	   1000000,   2500000,	  5000000,    10000000,	  25000000,    50000000, 100000000,
	250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

/* FLOOR first (when not 0), then the standard bounds above it. */
static void bounds_init(struct m_bounds *b, __u64 floor_ns)
{
	b->n = 0;
	if (floor_ns)
		b->ns[b->n++] = floor_ns;
	for (size_t i = 0; i < sizeof(std_bounds_ns) / sizeof(std_bounds_ns[0]); i++)
		if (std_bounds_ns[i] > floor_ns && b->n < M_MAX_BOUNDS)
			b->ns[b->n++] = std_bounds_ns[i];
}

static void hist_add(struct m_hist *h, const struct m_bounds *b, __u64 dur, __u64 n, __u64 sum)
{
	__u32 i = 0;

	while (i < b->n && dur > b->ns[i])
		i++;
	h->bucket[i] += n;
	h->count += n;
	h->sum_ns += sum;
}

static void series_free(struct m_series *s)
{
	hmap__free(s->syscalls);
	hmap__free(s->ucalls);
	memset(s, 0, sizeof(*s));
}

struct metrics *metrics__new(const struct metrics_opts *o)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->o = *o;
	pthread_mutex_init(&m->lock, NULL);
	m->procs = hmap__new(sizeof(struct m_proc));
	m->sys_last = hmap__new(sizeof(struct m_count));
	m->gil_last = hmap__new(sizeof(struct m_count));
	m->sys_hist = hmap__new(sizeof(struct m_hist));
	m->gpu = hmap__new(sizeof(struct m_gpu));
	if (!m->procs || !m->sys_last || !m->gil_last || !m->sys_hist || !m->gpu) {
		metrics__free(m);
		return NULL;
	}
	/* Calls under the threshold are only counted in BPF: the first bucket holds them all. */
	bounds_init(&m->sys_bounds, o->syscall_floor_ns);
	bounds_init(&m->call_bounds, 0);
	return m;
}

void metrics__free(struct metrics *m)
{
	struct m_proc *p;
	struct m_gpu *g;
	size_t it = 0;

	if (!m)
		return;
	while (m->procs && (p = hmap__next(m->procs, &it, NULL)))
		series_free(&p->s);
	series_free(&m->other);
	for (it = 0; m->gpu && (g = hmap__next(m->gpu, &it, NULL));)
		busy_union__free(&g->busy);
	hmap__free(m->procs);
	hmap__free(m->sys_last);
	hmap__free(m->gil_last);
	hmap__free(m->sys_hist);
	hmap__free(m->gpu);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct m_proc *proc_get(struct metrics *m, __u32 pid, int create)
{
	struct m_proc *p = hmap__get(m->procs, (struct hkey){ pid, 0 }, create);

	if (p && !p->pid)
		p->pid = pid;
	return p;
}

static void proc_drop(struct metrics *m, __u32 pid)
{
	struct m_proc *p = proc_get(m, pid, 0);

	if (!p)
		return;
	if (p->owned)
		m->nowned--;
	series_free(&p->s);
	hmap__del(m->procs, (struct hkey){ pid, 0 });
}

/*
 * The series the events of PID go to, counting them as its activity: its own, or "other"
 * when top_n processes own series already. A process seen for the first time (no PROCESS or
 * FORK record: pid 0 records, threads of processes that started before) gets an entry here.
 */
static struct m_series *series_of(struct metrics *m, __u32 pid, __u64 events)
{
	struct m_proc *p = pid ? proc_get(m, pid, 1) : NULL;

	if (!p)
		return &m->other;
	p->activity += events;
	if (!p->owned && !p->dead_at && m->nowned < m->o.top_n) {
		p->owned = 1;
		m->nowned++;
	}
	return p->owned ? &p->s : &m->other;
}

static struct m_count *count_at(struct hmap **h, struct hkey k)
{
	if (!*h && !(*h = hmap__new(sizeof(struct m_count))))
		return NULL;
	return hmap__get(*h, k, 1);
}

static struct m_hist *hist_at(struct hmap **h, struct hkey k)
{
	if (!*h && !(*h = hmap__new(sizeof(struct m_hist))))
		return NULL;
	return hmap__get(*h, k, 1);
}

/*
 * A cumulative snapshot of KEY in LAST: the increment since the previous one. A snapshot
 * below the previous one is a new thread with a recycled id (its BPF entry started at 0).
 */
static struct m_count delta_of(struct hmap *last, struct hkey key, __u64 count, __u64 total)
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

static void on_syscall(struct metrics *m, const struct bs_syscall *r)
{
	struct m_series *s = series_of(m, r->h.pid, 1);
	struct m_count *c = count_at(&s->syscalls, (struct hkey){ r->nr, 0 });
	struct m_hist *h = hmap__get(m->sys_hist, (struct hkey){ r->nr, 0 }, 1);

	if (c) {
		c->count++;
		c->total_ns += r->dur;
	}
	if (h)
		hist_add(h, &m->sys_bounds, r->dur, 1, r->dur);
}

static void on_syscall_agg(struct metrics *m, const struct bs_syscall_agg *r)
{
	struct hkey key = { (__u64)r->h.pid << 32 | r->h.tid, r->nr };
	struct m_count d = delta_of(m->sys_last, key, r->count, r->total_ns);
	struct m_series *s;
	struct m_count *c;
	struct m_hist *h;

	if (r->flags & BS_AGG_FINAL) /* the thread is gone: a later snapshot is a new one */
		hmap__del(m->sys_last, key);
	if (!d.count)
		return;
	s = series_of(m, r->h.pid, d.count);
	if ((c = count_at(&s->syscalls, (struct hkey){ r->nr, 0 }))) {
		c->count += d.count;
		c->total_ns += d.total_ns;
	}
	/* Every one of them was under the threshold: the first bucket, exactly. */
	if ((h = hmap__get(m->sys_hist, (struct hkey){ r->nr, 0 }, 1)))
		hist_add(h, &m->sys_bounds, 0, d.count, d.total_ns);
}

static void on_gil_agg(struct metrics *m, const struct bs_gil_agg *r)
{
	struct hkey key = { (__u64)r->h.pid << 32 | r->h.tid, 0 };
	struct m_count d = delta_of(m->gil_last, key, r->v.wait_count, r->v.wait_total_ns);
	struct m_series *s;

	if (!d.count && !d.total_ns)
		return;
	s = series_of(m, r->h.pid, d.count);
	s->gil_waits += d.count;
	s->gil_wait_ns += d.total_ns;
}

static void on_offcpu(struct metrics *m, const struct bs_offcpu *r)
{
	struct m_series *s = series_of(m, r->h.pid, 1);
	__u64 runnable = r->runnable_ns < r->dur ? r->runnable_ns : r->dur;
	int blocked = M_OFF_OTHER;

	/* prev_state: TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2; 0 was preempted. */
	if (r->state == 0)
		blocked = M_OFF_RUNNABLE;
	else if (r->state & 1)
		blocked = M_OFF_SLEEPING;
	else if (r->state & 2)
		blocked = M_OFF_DISK;
	s->offcpu_ns[M_OFF_RUNNABLE] += runnable;
	s->offcpu_ns[blocked] += r->dur - runnable;
}

static void on_ucall(struct metrics *m, const struct bs_ucall *r, __u32 table)
{
	struct m_series *s;
	struct m_hist *h;

	if (r->depth) /* a call the library made inside one the application made */
		return;
	s = series_of(m, r->h.pid, 1);
	if ((h = hist_at(&s->ucalls, (struct hkey){ table, r->fn })))
		hist_add(h, &m->call_bounds, r->dur, 1, r->dur);
}

static void on_exit_rec(struct metrics *m, const struct bs_exit *r)
{
	struct m_proc *p;

	/* gil wrote the thread's final totals before its exit record: forget the snapshot. */
	hmap__del(m->gil_last, (struct hkey){ (__u64)r->h.pid << 32 | r->h.tid, 0 });
	if (r->group_dead && (p = proc_get(m, r->h.pid, 0)))
		p->dead_at = r->h.ts ? r->h.ts : 1;
}

static void set_comm(struct metrics *m, __u32 pid, const char *comm)
{
	struct m_proc *p = proc_get(m, pid, 1);

	if (p)
		memcpy(p->comm, comm, BS_COMM_LEN);
}

/* A new process under PID: a recycled pid continues nothing of the process it was before. */
static void on_fork(struct metrics *m, const struct bs_fork *r)
{
	if (r->child_pid != r->child_tid)
		return; /* a thread */
	proc_drop(m, r->child_pid);
	set_comm(m, r->child_pid, r->comm);
}

/*
 * Every REBALANCE_NS: an exited process's entry goes after the grace period; then while the
 * busiest process without series had more than twice the events of the quietest owner (and
 * a margin, so that noise does not swap them), they swap.
 */
static void rebalance(struct metrics *m)
{
	struct m_proc *p, *lo, *hi;
	__u32 dead[256];
	int ndead = 0;
	size_t it;

	do {
		ndead = 0;
		it = 0;
		while ((p = hmap__next(m->procs, &it, NULL)) && ndead < 256)
			if (p->dead_at && m->now > p->dead_at + m->o.grace_ns)
				dead[ndead++] = p->pid;
		for (int i = 0; i < ndead; i++)
			proc_drop(m, dead[i]);
	} while (ndead == 256);
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
		hi->activity = 0; /* counted once per round */
	}
	/* An exit can be missed (it raced the snapshot at the start): ask the kernel. */
	it = 0;
	while ((p = hmap__next(m->procs, &it, NULL))) {
		if (!p->activity && !p->dead_at && kill(p->pid, 0) && errno == ESRCH)
			p->dead_at = m->now;
		p->activity = 0;
	}
}

void metrics__housekeep(struct metrics *m, __u64 now)
{
	if (now > m->now)
		m->now = now;
	if (!m->last_rebalance) /* the first window starts with the first record */
		m->last_rebalance = m->now;
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
	case BS_REC_SYSCALL:
		on_syscall(m, (const void *)h);
		break;
	case BS_REC_SYSCALL_AGG:
		on_syscall_agg(m, (const void *)h);
		break;
	case BS_REC_GIL_AGG:
		on_gil_agg(m, (const void *)h);
		break;
	case BS_REC_OFFCPU:
		on_offcpu(m, (const void *)h);
		break;
	case BS_REC_CUDA_CALL:
		on_ucall(m, (const void *)h, M_UCALL_CUDA);
		break;
	case BS_REC_NCCL_CALL:
		on_ucall(m, (const void *)h, M_UCALL_NCCL);
		break;
	case BS_REC_GPU_KERNEL: {
		const struct bs_gpu_kernel *k = (const void *)h;
		struct m_gpu *g = hmap__get(m->gpu, (struct hkey){ k->device, 0 }, 1);

		if (g) {
			g->count++;
			g->total_ns += k->dur;
			busy_union__add(&g->busy, h->ts, h->ts + k->dur);
		}
		break;
	}
	case BS_REC_LOSS: {
		const struct bs_loss *l = (const void *)h;

		if (l->cause < BS_LOSS_NR)
			m->lost[l->cause] += l->count;
		break;
	}
	case BS_REC_PROCESS:
		set_comm(m, h->pid, ((const struct bs_process *)h)->comm);
		break;
	case BS_REC_FORK:
		on_fork(m, (const void *)h);
		break;
	case BS_REC_EXEC:
		set_comm(m, h->pid, ((const struct bs_exec *)h)->comm);
		break;
	case BS_REC_COMM:
		if (h->pid == h->tid) /* the process's name is its main thread's */
			set_comm(m, h->pid, ((const struct bs_comm *)h)->comm);
		break;
	case BS_REC_EXIT:
		on_exit_rec(m, (const void *)h);
		break;
	case BS_REC_GIL_PROC: { /* series from 0 before the first wait: increase() sees it all */
		struct m_proc *p = proc_get(m, h->pid, 1);

		if (p)
			p->python = ((const struct bs_gil_proc *)h)->method != BS_GIL_METHOD_NONE;
		series_of(m, h->pid, 0); /* series of its own now, if there is room */
		break;
	}
	}
	metrics__housekeep(m, 0);
	pthread_mutex_unlock(&m->lock);
}
