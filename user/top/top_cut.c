// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An interval cut into a frame (top.h): each thread's counters become what its columns show
 * (a share of the interval, a rate, the longest event), each process gets the sum of its
 * threads (the longest: their longest), then the counters start over; a level (the bytes a
 * process holds) is the process's own and stays.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "array.h"
#include "top_funcs.h"
#include "top_priv.h"
#include "trace_model.h"
#include "hmap.h"

/*
 * The name a thread (TID 0: a process) is shown by. The trace model's: the comm, or a name
 * the application gave the thread (NVTX); the one place to ask for another (Python's).
 * Printable ASCII only: a name is the traced program's, and the terminal must not obey it.
 */
static void row_name(const struct top *t, __u32 pid, __u32 tid, char *buf)
{
	/* A pool's member: its comm, its part has the ROLE column. */
	const char *n = tid ? trace_model__thread_name(t->model, tid)
			: trace_model__process_role(t->model, pid)
				? trace_model__process_comm(t->model, pid)
				: trace_model__process_name(t->model, pid);

	if (!n)
		n = tid ? trace_model__process_name(t->model, pid)
			: trace_model__thread_name(t->model, pid);
	snprintf(buf, TOP_NAME_LEN, "%s", n && *n ? n : "?");
	for (char *p = buf; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

static int has_polled(const struct top *t, int fi)
{
	for (__u32 c = 1; c < t->ncols; c++)
		if (t->cols[c].fi == fi && (t->cols[c].c->flags & TOP_POLLED))
			return 1;
	return 0;
}

static double scale(const struct top_column *c, __u64 v, __u64 span)
{
	double x = c->kind == TOP_SHARE	 ? v * 100.0 / span
		   : c->kind == TOP_RATE ? v * 1e9 / span
					 : v;

	/*
	 * A thread is busy at most all the time. More comes from when values arrive: a polled
	 * wait that began before the previous poll, GPU kernels handed over late in a batch.
	 */
	return c->kind == TOP_SHARE && x > 100 ? 100 : x;
}

/*
 * Family FI's polled columns: the snapshots since the last cut are divided by the time between
 * the polls they came in; with no new poll the last value holds, until none came for
 * TOP_POLL_STALE_NS (a family writes a snapshot only when a total changed).
 */
static void cut_polled(struct top *t, int fi, __u64 now)
{
	__u64 span = t->poll_ts[fi] > t->poll_cut[fi] ? t->poll_ts[fi] - t->poll_cut[fi] : 0;
	__u64 last = t->poll_ts[fi] > t->poll_cut[fi] ? t->poll_ts[fi] : t->poll_cut[fi];
	struct top_thread *th;
	size_t it = 0;

	if (!span && now - last < TOP_POLL_STALE_NS)
		return;
	while ((th = hmap__next(t->threads, &it, NULL)))
		for (__u32 c = 1; c < t->ncols; c++) {
			if (t->cols[c].fi != fi || !(t->cols[c].c->flags & TOP_POLLED))
				continue;
			th->polled[c] = span ? scale(t->cols[c].c, th->cell[c].v, span) : 0;
			th->cell[c].v = 0;
		}
	if (span)
		t->poll_cut[fi] = t->poll_ts[fi];
}

/*
 * CPU% of a thread: its on-CPU time since the last cut (0 once it has exited). A thread or
 * process /proc no longer has is gone, its exit record lost or still on its way: it goes
 * after this frame, as if the record had come.
 */
static double cpu_share(const struct top *t, struct top_thread *th, __u64 now, __u64 span)
{
	char path[32];
	__u64 ns, delay = 0;
	double pct = 0;
	int err;

	if (t->replay)
		return 0;
	if (!th->tid) {
		snprintf(path, sizeof(path), "/proc/%u", th->pid);
		if (access(path, F_OK) && errno == ENOENT)
			th->flags |= TOP_ROW_EXITED;
		return 0;
	}
	err = top_cpu__read(th->pid, th->tid, &ns, &delay);
	/*
	 * Gone from /proc, its EXIT record not here yet (the ring is behind the cut): kept for
	 * the record's CPU time, counted at the next cut, for at most a few cuts.
	 */
	if (err == -ENOENT && !th->exit_seen && ++th->vanished < 3)
		return 0;
	if (err == -ENOENT)
		th->flags |= TOP_ROW_EXITED;
	/* Gone before this read: its EXIT record said its whole CPU time (a request thread of a
	 * few ms is born and dies between two reads). */
	if (err && th->exit_cpu_ns) {
		ns = th->exit_cpu_ns;
		th->exit_cpu_ns = 0;
		err = 0;
	}
	if (err)
		return 0;
	/*
	 * The ledger view's clocks of the interval: a thread asleep since before it has no
	 * record in it yet (its switch-in writes it), which the ledger's timeline alone would
	 * count as time on a CPU.
	 */
	if (t->ledger && th->cpu_known && ns >= th->cpu_ns) {
		t->ledger_ops->clock(t->ledger, th->pid, th->tid, t->last_cut, th->cpu_ns,
				     th->delay_ns, 0);
		t->ledger_ops->clock(t->ledger, th->pid, th->tid, now, ns, delay, 1);
	}
	th->delay_ns = delay;
	if (th->cpu_known && ns >= th->cpu_ns)
		pct = (ns - th->cpu_ns) * 100.0 / span;
	if (pct > 100) /* the interval's clock and the scheduler's disagree by a tick */
		pct = 100;
	th->cpu_ns = ns;
	th->cpu_known = 1;
	return pct;
}

static struct top_row *new_row(struct top_frame *fr)
{
	if (array__grow((void **)&fr->rows, fr->nrows, &fr->cap, sizeof(*fr->rows)))
		return NULL;
	memset(&fr->rows[fr->nrows], 0, sizeof(fr->rows[0]));
	return &fr->rows[fr->nrows++];
}

/* TH's row: its values as shown. */
static int thread_row(struct top *t, struct top_thread *th, struct top_frame *fr, __u64 span)
{
	struct top_row *r = new_row(fr);

	if (!r)
		return -ENOMEM;
	r->pid = th->pid;
	r->tid = th->tid;
	r->val[0] = cpu_share(t, th, fr->now, span);
	r->flags = th->flags;
	row_name(t, th->pid, th->tid, r->name);
	for (__u32 c = 1; c < t->ncols; c++) {
		const struct top_column *col = t->cols[c].c;

		if ((int)c == t->now_col) {
			top_now__cell(t, th, fr->now, &r->val[c], &r->label[c]);
			continue;
		}
		if (col->kind == TOP_TAG)
			continue; /* top_role__cells */
		r->val[c] =
			col->flags & TOP_POLLED ? th->polled[c] : scale(col, th->cell[c].v, span);
		r->label[c] = th->cell[c].label;
	}
	top_role__cells(t, th, r);
	return 0;
}

/* Each process row gets its threads' values: summed, the longest event their longest. */
/* The column showing COL (its index), -1 when top has none. */
static int col_of(const struct top *t, const struct top_column *col)
{
	for (__u32 c = 0; c < t->ncols; c++)
		if (t->cols[c].c == col)
			return (int)c;
	return -1;
}

/*
 * A process row's NOW: what its leading thread does, not its longest wait (a DataLoader's
 * feeder asleep in a futex while the main thread runs sgemm_). The thread with the most CPU
 * this interval leads; the main thread when it had at least half that, or none had any.
 */
static void process_now(const struct top *t, struct top_frame *fr, size_t p)
{
	int cpu = col_of(t, &top_cpu_column), now = t->now_col;
	const struct top_row *best = NULL, *main = NULL, *pick;
	__u32 pid = fr->rows[p].pid;

	if (now < 0)
		return;
	for (size_t i = 0; i < fr->nrows; i++) {
		const struct top_row *r = &fr->rows[i];

		if (!r->tid || r->pid != pid || !r->label[now])
			continue;
		if (r->tid == pid)
			main = r;
		if (cpu >= 0 && r->val[cpu] > 0 && (!best || r->val[cpu] > best->val[cpu]))
			best = r;
	}
	pick = main && (!best || 2 * main->val[cpu] >= best->val[cpu]) ? main : best;
	if (!pick)
		return; /* no thread read now: the longest stays */
	fr->rows[p].val[now] = pick->val[now];
	fr->rows[p].label[now] = pick->label[now];
}

static int sum_processes(struct top *t, struct top_frame *fr)
{
	struct hmap *procs = hmap__new(sizeof(size_t));
	size_t *at;

	if (!procs)
		return -ENOMEM;
	for (size_t i = 0; i < fr->nrows; i++)
		if (!fr->rows[i].tid &&
		    (at = hmap__get(procs, (struct hkey){ fr->rows[i].pid }, 1)))
			*at = i;
	for (size_t i = 0; i < fr->nrows; i++) {
		const struct top_row *r = &fr->rows[i];
		struct top_row *p;

		if (!r->tid || !(at = hmap__get(procs, (struct hkey){ r->pid }, 0)))
			continue;
		p = &fr->rows[*at];
		for (__u32 c = 0; c < t->ncols; c++) {
			if (t->cols[c].c->kind != TOP_LONGEST)
				p->val[c] += r->val[c];
			else if (r->val[c] > p->val[c]) {
				p->val[c] = r->val[c];
				p->label[c] = r->label[c];
			}
		}
	}
	hmap__free(procs);
	for (size_t i = 0; i < fr->nrows; i++)
		if (!fr->rows[i].tid)
			process_now(t, fr, i);
	for (size_t i = 0; i < fr->nrows; i++) {
		struct top_row *r = &fr->rows[i];
		__u32 c = 0;

		while (c < t->ncols && (!r->val[c] || t->cols[c].c->kind == TOP_TAG))
			c++;
		if (c == t->ncols)
			r->flags |= TOP_ROW_IDLE;
		fr->nprocs += !r->tid;
		fr->nthreads += !!r->tid;
	}
	return 0;
}

/* "cuda: ringbuf_full 12; gil: task_map_full 3" for the interval's losses. */
static void cut_losses(struct top *t, struct top_frame *fr)
{
	size_t used = 0;

	fr->lost = t->lost;
	fr->lost_interval = t->lost - t->lost_cut;
	fr->lost_why[0] = 0;
	for (int i = 0; i < TOP_LOSS_KINDS && t->lost_kinds[i].n; i++) {
		int n = snprintf(fr->lost_why + used, sizeof(fr->lost_why) - used, "%s%s: %s %llu",
				 i ? "; " : "", t->lost_kinds[i].family, t->lost_kinds[i].cause,
				 (unsigned long long)t->lost_kinds[i].n);

		used += n > 0 ? (size_t)n : 0;
		if (used >= sizeof(fr->lost_why))
			break;
	}
	t->lost_cut = t->lost;
	memset(t->lost_kinds, 0, sizeof(t->lost_kinds));
}

/* The counters start over; what exited goes, now that it was shown once more. */
static void start_over(struct top *t)
{
	struct top_thread *th;
	struct hkey gone[64];
	size_t it = 0, n = 0;

	do {
		n = 0;
		it = 0;
		while ((th = hmap__next(t->threads, &it, NULL))) {
			if ((th->flags & TOP_ROW_EXITED) && n < 64) {
				gone[n++] = (struct hkey){ th->pid, th->tid };
				continue;
			}
			for (__u32 c = 1; c < t->ncols; c++)
				if (!(t->cols[c].c->flags & TOP_POLLED) &&
				    t->cols[c].c->kind != TOP_LEVEL &&
				    t->cols[c].c->kind != TOP_VALUE)
					th->cell[c] = (struct top_cell){ 0 };
		}
		for (size_t i = 0; i < n; i++)
			hmap__del(t->threads, gone[i]);
	} while (n == 64);
}

/* The ledger view's lines of the interval, and a new ledger for the next one. */
static int cut_ledger(struct top *t, __u64 now, struct top_frame *fr)
{
	FILE *f;

	free(fr->ledger);
	fr->ledger = NULL;
	fr->ledger_len = 0;
	fr->ledger_cut = !!t->ledger;
	if (!t->ledger)
		return 0;
	f = open_memstream(&fr->ledger, &fr->ledger_len);
	if (!f)
		return -ENOMEM;
	t->ledger_ops->lines(t->ledger, t->model, t->last_cut, now, f);
	fclose(f);
	t->ledger_ops->free(t->ledger);
	t->ledger = t->ledger_ops->new ();
	return t->ledger ? 0 : -ENOMEM;
}

int top__cut(struct top *t, __u64 now, struct top_frame *fr)
{
	struct top_thread *th;
	__u64 span;
	size_t it = 0;
	int err = 0;

	pthread_mutex_lock(&t->lock);
	span = now > t->last_cut ? now - t->last_cut : 1;
	fr->now = now;
	fr->span_ns = span;
	fr->cols = t->cols;
	fr->ncols = t->ncols;
	fr->shown = t->shown;
	fr->nrows = fr->nprocs = fr->nthreads = 0;
	fr->records_per_s = (t->records - t->records_cut) * 1e9 / span;
	t->records_cut = t->records;
	for_each_family_while(fit, fit.i < FAMILY_MAX)
		if (t->col_base[fit.i] >= 0 && has_polled(t, fit.i))
			cut_polled(t, fit.i, now);
	while (!err && (th = hmap__next(t->threads, &it, NULL)))
		err = thread_row(t, th, fr, span);
	if (!err)
		err = sum_processes(t, fr);
	fr->shown &= ~(1u << t->rank_col | 1u << t->role_col);
	for (size_t i = 0; i < fr->nrows; i++) /* RANK, ROLE: when a process has one */
		for (int c = t->rank_col; c <= t->role_col; c++)
			if (fr->rows[i].label[c])
				fr->shown |= 1u << c;
	if (!err)
		err = top_funcs__cut(t->funcs, t->model, t->want_funcs, fr->funcs);
	fr->funcs_cut = t->want_funcs;
	fr->sampled = top_funcs__sampled(t->funcs);
	if (!err)
		err = cut_ledger(t, now, fr);
	cut_losses(t, fr);
	start_over(t);
	t->last_cut = now;
	pthread_mutex_unlock(&t->lock);
	return err;
}

void top_frame__free(struct top_frame *fr)
{
	top_funcs_frame__free(&fr->funcs[0]);
	top_funcs_frame__free(&fr->funcs[1]);
	free(fr->rows);
	free(fr->ledger);
	memset(fr, 0, sizeof(*fr));
}
