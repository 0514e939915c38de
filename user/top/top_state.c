// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's counters fed the record stream (top.h): the processes and threads from the recording's
 * lifecycle records, their names through a trace model (what every reader names them by), the
 * losses, and the families' columns (top_family.h), folded per thread for the interval under
 * way. top_cut.c turns an interval into a frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "loss.h"
#include "mono_clock.h"
#include "record_ctx.h"
#include "top_funcs.h"
#include "top_priv.h"
#include "trace_model.h"
#include "hmap.h"

/* CPU%: top's own column, from each thread's on-CPU time (top_cpu.c). */
const struct top_column top_cpu_column = {
	"cpu", "CPU%", "time on a CPU (100% = one CPU)", TOP_SHARE, 0, 5,
};

static int is_target(const struct top *t, __u32 pid)
{
	for (__u32 i = 0; i < t->o->npids; i++)
		if ((__u32)t->o->pids[i] == pid)
			return 1;
	return 0;
}

struct top_thread *top__thread(struct top *t, __u32 pid, __u32 tid)
{
	struct top_thread *th;

	if (tid && !top__thread(t, pid, 0)) /* its process first: creating may move entries */
		return NULL;
	th = hmap__get(t->threads, (struct hkey){ pid, tid }, 0);
	if (th)
		return th;
	th = hmap__get(t->threads, (struct hkey){ pid, tid }, 1);
	if (!th)
		return NULL;
	th->pid = pid;
	th->tid = tid;
	th->flags = !tid && is_target(t, pid) ? TOP_ROW_TARGET : 0;
	top_role__born(t, th);
	/* A thread seen for the first time has run before: its CPU% counts from now. */
	if (tid && !t->replay)
		th->cpu_known = !top_cpu__read(pid, tid, &th->cpu_ns, &th->delay_ns);
	return th;
}

/*
 * The entry an event of TID in PID counts in. One that comes after its thread exited (a GPU
 * kernel handed over late) counts for the process, and one after the process exited is
 * dropped: neither must bring back an entry that nothing would remove again.
 */
static struct top_thread *event_thread(struct top *t, __u32 pid, __u32 tid)
{
	struct top_thread *th = hmap__get(t->threads, (struct hkey){ pid, tid }, 0);
	char path[64];
	__u64 ns;

	if (th || t->replay)
		return th ? th : top__thread(t, pid, tid);
	if (tid && !top_cpu__read(pid, tid, &ns, NULL))
		return top__thread(t, pid, tid);
	th = hmap__get(t->threads, (struct hkey){ pid, 0 }, 0);
	if (th)
		return th;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	return access(path, F_OK) ? NULL : top__thread(t, pid, 0);
}

/* A new process or thread: it starts from nothing (a recycled id inherits nothing). */
static void born(struct top *t, __u32 pid, __u32 tid)
{
	struct top_thread *th;

	if (tid == pid) /* a new process: its own entry starts over too */
		hmap__del(t->threads, (struct hkey){ pid, 0 });
	hmap__del(t->threads, (struct hkey){ pid, tid });
	th = top__thread(t, pid, tid);
	if (th) { /* all its time on a CPU is since it was born */
		th->cpu_ns = 0;
		th->cpu_known = 1;
	}
}

static void exited(struct top *t, const struct bs_hdr *h)
{
	const struct bs_exit *e = (const void *)h;
	struct top_thread *th;

	if (h->size < sizeof(*e))
		return;
	if ((th = top__thread(t, h->pid, h->tid))) {
		th->flags |= TOP_ROW_EXITED;
		th->exit_seen = 1;
		if (h->size >= sizeof(struct bs_exit_cpu))
			th->exit_cpu_ns = ((const struct bs_exit_cpu *)h)->cpu_ns;
	}
	if (e->group_dead && (th = top__thread(t, h->pid, 0)))
		th->flags |= TOP_ROW_EXITED;
}

/* After an exec the caller is the leader (tid == pid) and the process's only thread. */
static void execed(struct top *t, const struct bs_hdr *h)
{
	struct top_thread *th;

	if (h->tid != h->pid)
		hmap__del(t->threads, (struct hkey){ h->pid, h->tid });
	if ((th = top__thread(t, h->pid, h->pid)))
		th->flags &= ~TOP_ROW_EXITED; /* the old leader's exit came before */
	if ((th = top__thread(t, h->pid, 0)))
		th->flags &= ~TOP_ROW_EXITED;
}

/* The processes and threads there are, from the lifecycle records. */
static void lifecycle(struct top *t, const struct bs_hdr *h)
{
	const struct bs_fork *f = (const void *)h;

	switch (h->type) {
	case BS_REC_PROCESS:
		top__thread(t, h->pid, h->tid ? h->tid : h->pid);
		break;
	case BS_REC_THREAD:
		top__thread(t, h->pid, h->tid);
		break;
	case BS_REC_FORK:
		if (h->size >= sizeof(*f))
			born(t, f->child_tid == f->child_pid ? f->child_pid : h->pid, f->child_tid);
		break;
	case BS_REC_EXEC:
		execed(t, h);
		break;
	case BS_REC_EXIT:
		exited(t, h);
		break;
	}
}

/* A loss: counted, and its cause named on the interval's loss line. */
static void lost(struct top *t, const struct bs_hdr *h)
{
	const struct bs_loss *l = (const void *)h;
	const char *fam, *cause;
	int i;

	if (h->size < sizeof(*l))
		return;
	t->lost += l->count;
	fam = loss__family_name(l);
	cause = loss_cause_name(l->cause);
	for (i = 0; i < TOP_LOSS_KINDS && t->lost_kinds[i].n; i++)
		if (t->lost_kinds[i].family == fam && t->lost_kinds[i].cause == cause)
			break;
	if (i == TOP_LOSS_KINDS)
		return; /* counted in the total; the line names the first few causes */
	t->lost_kinds[i] = (struct top_loss_kind){ fam, cause, t->lost_kinds[i].n + l->count };
}

/* The first interval starts at NOW. */
static void start_clock(struct top *t, __u64 now)
{
	t->live_since = t->last_cut = now;
	for (int i = 0; i < FAMILY_MAX; i++)
		t->poll_cut[i] = t->poll_start && t->poll_start < now ? t->poll_start : now;
}

void top__live(void *arg)
{
	struct top *t = arg;

	pthread_mutex_lock(&t->lock);
	if (!t->live_since)
		start_clock(t, mono_now_ns());
	pthread_mutex_unlock(&t->lock);
}

void top__record(void *arg, const struct bs_hdr *h)
{
	struct top *t = arg;

	pthread_mutex_lock(&t->lock);
	if (!t->live_since && t->replay) /* a file's first record: its start */
		start_clock(t, t->replay_start ? t->replay_start : h->ts ? h->ts : mono_now_ns());
	t->records++;
	t->now_ts = h->ts;
	trace_model__observe(t->model, h);
	if (h->type == BS_REC_LOSS)
		lost(t, h);
	else if (h->type < 0x10) /* the recording's own block: processes and threads */
		lifecycle(t, h);
	else if (h->type == BS_REC_THREAD_SNAP)
		top_now__snap(t, h);
	else if (h->type == BS_REC_PROC_SNAP)
		top_role__snap(t, h);
	for_each_family_slot(it, t->states)
		if (t->hooked[it.i] && it.f->top->record)
			it.f->top->record(t, *it.slot, h);
	if (t->ledger)
		t->ledger_ops->add(t->ledger, h, t->model);
	pthread_mutex_unlock(&t->lock);
}

void top__set_ledger(struct top *t, const struct top_ledger_ops *ops)
{
	t->ledger_ops = ops;
}

void top__want_ledger(struct top *t, int on)
{
	pthread_mutex_lock(&t->lock);
	if (on && !t->ledger && t->ledger_ops)
		t->ledger = t->ledger_ops->new ();
	else if (!on && t->ledger) {
		t->ledger_ops->free(t->ledger);
		t->ledger = NULL;
	}
	pthread_mutex_unlock(&t->lock);
}

/* Column COL of F as the view numbers it, or -1 (a family top does not show). */
static int col_of(const struct top *t, const struct family *f, int col)
{
	for_each_family(it)
		if (it.f == f)
			return t->col_base[it.i] >= 0 ? t->col_base[it.i] + col : -1;
	return -1;
}

void top__add(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid, __u64 v)
{
	int c = col_of(t, f, col);
	struct top_thread *th;

	if (c < 0 || !(th = event_thread(t, pid, tid)))
		return;
	th->cell[c].v += v;
	t->shown |= 1u << c;
	if ((t->cols[c].c->flags & TOP_POLLED) && t->now_ts > t->poll_ts[t->cols[c].fi])
		t->poll_ts[t->cols[c].fi] = t->now_ts;
}

void top__show(struct top *t, const struct family *f, int col)
{
	int c = col_of(t, f, col);

	if (c >= 0)
		t->shown |= 1u << c;
}

void top__add_span(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid,
		   __u64 start, __u64 dur)
{
	__u64 from = start > t->last_cut ? start : t->last_cut, end = start + dur;

	top__add(t, f, col, pid, tid, end > from ? end - from : 0);
}

void top__sample(struct top *t, __u32 stack_id, int kernel, __u64 period_ns)
{
	top_funcs__sample(t->funcs, stack_id, kernel, period_ns);
}

void top__want_functions(struct top *t, int on)
{
	pthread_mutex_lock(&t->lock);
	t->want_funcs = on;
	pthread_mutex_unlock(&t->lock);
}

void top__reset_functions(struct top *t)
{
	pthread_mutex_lock(&t->lock);
	top_funcs__reset(t->funcs);
	pthread_mutex_unlock(&t->lock);
}

void top__set_sample_period(struct top *t, __u64 period_ns)
{
	top_funcs__set_period(t->funcs, period_ns);
}

void top__set(struct top *t, const struct family *f, int col, __u32 pid, __u64 v)
{
	int c = col_of(t, f, col);
	struct top_thread *th;

	if (c < 0 || !(th = event_thread(t, pid, 0)))
		return;
	th->cell[c].v = v;
	t->shown |= 1u << c;
}

void top__longest(struct top *t, const struct family *f, int col, __u32 pid, __u32 tid, __u64 dur,
		  const char *label)
{
	int c = col_of(t, f, col);
	struct top_thread *th;

	if (c < 0 || !(th = event_thread(t, pid, tid)))
		return;
	t->shown |= 1u << c;
	if (dur >= th->cell[c].v) {
		th->cell[c].v = dur;
		th->cell[c].label = label;
	}
}

/*
 * CPU% first, then the columns of each recorded family that has some, in registry order; a
 * recorded family without columns (samples for the function view) has its hooks too.
 */
static int add_columns(struct top *t)
{
	t->cols[t->ncols++] = (struct top_col){ &top_cpu_column, NULL, -1 };
	t->shown = 1;
	t->now_col = -1;
	if (t->o->now_every_ns) {
		t->now_col = (int)t->ncols;
		t->cols[t->ncols++] = (struct top_col){ &top_now_column, NULL, -1 };
	}
	/* Shown in a frame when a process there has one (top_cut.c). */
	t->rank_col = (int)t->ncols;
	t->cols[t->ncols++] = (struct top_col){ &top_rank_column, NULL, -1 };
	t->role_col = (int)t->ncols;
	t->cols[t->ncols++] = (struct top_col){ &top_role_column, NULL, -1 };
	for_each_family_while(fit, fit.i < FAMILY_MAX) {
		const struct top_column *c = fit.f->top ? fit.f->top->columns : NULL;

		t->col_base[fit.i] = -1;
		if (!fit.f->top || !(t->o->families & (1ull << fit.i)))
			continue;
		t->hooked[fit.i] = 1;
		t->col_base[fit.i] = c ? (int)t->ncols : -1;
		for (int k = 0; c && c[k].key && k < TOP_FAMILY_COLS; k++) {
			if (t->ncols == TOP_MAX_COLS)
				return -E2BIG;
			t->cols[t->ncols++] = (struct top_col){ &c[k], fit.f, fit.i };
		}
		if (fit.f->top->open && fit.f->top->open(t->o, &t->states[fit.i]))
			return -ENOMEM;
	}
	return 0;
}

struct top *top__new(const struct record_opts *o)
{
	struct top *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->o = o;
	t->model = trace_model__new();
	t->threads = hmap__new(sizeof(struct top_thread));
	t->funcs = top_funcs__new();
	if (!t->model || !t->threads || !t->funcs || add_columns(t)) {
		top__free(t);
		return NULL;
	}
	return t;
}

void top__free(struct top *t)
{
	if (!t)
		return;
	for_each_family_while(fit, fit.i < FAMILY_MAX)
		if (t->states[fit.i] && fit.f->top->free)
			fit.f->top->free(t->states[fit.i]);
	trace_model__free(t->model);
	hmap__free(t->threads);
	top_funcs__free(t->funcs);
	if (t->ledger)
		t->ledger_ops->free(t->ledger);
	top_now__free(t);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void top__replay_from(struct top *t, __u64 start, __u64 poll_start)
{
	t->replay_start = start;
	t->poll_start = poll_start;
}

void top__replay(struct top *t)
{
	t->replay = 1;
	t->shown &= ~1u; /* CPU% */
}

__u64 top__live_since(struct top *t)
{
	__u64 v;

	pthread_mutex_lock(&t->lock);
	v = t->live_since;
	pthread_mutex_unlock(&t->lock);
	return v;
}

const struct top_col *top__columns(struct top *t, __u32 *n)
{
	*n = t->ncols;
	return t->cols;
}

const char *top_col__key(const struct top_col *c)
{
	return c->c->key;
}
