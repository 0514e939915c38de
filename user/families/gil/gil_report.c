// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of gil: wait and hold events, and the reports
 *   gil_sum         per thread of each python process: waits (count, total, p50, p99, max),
 *                   contention (wait over the thread's wall time in the trace), method; in full
 *                   mode holds (count, total);
 *   gil_blocked_by  per (waiter, holder) pair: which threads made which ones wait, how long;
 *   gil_procs       per python process: version, interpreter file, method, what it misses.
 *
 * Counts and totals come from the in-kernel aggregates (cumulative snapshots, the last per key
 * counts), exact at any rate. Percentiles are exact over the waits that have their own record
 * (at or above the threshold); shorter ones are known by their log2 bucket only and stand in
 * at the middle of it (capped by the threshold).
 */
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gil.h"
#include "stats_math.h"
#include "hmap.h"
#include "table.h"

const char *gil_method_name(__u32 method)
{
	switch (method) {
	case BS_GIL_METHOD_CONDWAIT:
		return "condwait";
	case BS_GIL_METHOD_TAKE_GIL:
		return "take_gil";
	case BS_GIL_METHOD_NO_GIL:
		return "no-gil";
	default:
		return "none";
	}
}

static int decode_wait(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_wait *w = (const void *)rec;
	const char *holder = w->holder_tid ? trace_model__thread_name(m, w->holder_tid) : NULL;

	ev->name = "gil_wait";
	ev->dur = w->dur;
	/* --stacks=gil: the waiter's stack, and the holder's code in the wait's first round. */
	ev->stack = trace_model__event_stack(m, rec);
	ev->holder_stack = trace_model__stack_of(m, BS_REC_GIL_HOLDER, rec->tid, rec->ts);
	event__arg_u64(ev, "holder_tid", w->holder_tid);
	if (holder)
		event__arg_str(ev, "holder", holder);
	event__arg_u64(ev, "rounds", w->rounds);
	if (w->flags & BS_GIL_WAIT_MUTEX)
		event__arg_u64(ev, "mutex", 1);
	if (w->flags & BS_GIL_WAIT_HANDOFF)
		event__arg_u64(ev, "handoff", 1);
	if (w->flags & BS_GIL_WAIT_TAKE_GIL)
		event__arg_str(ev, "timed_by", "take_gil");
	if (w->flags & BS_GIL_WAIT_OPEN) /* still waiting at the dump's cut: dur ends there */
		event__arg_u64(ev, "in_flight", 1);
	return 1;
}

static int decode_hold(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_hold *h = (const void *)rec;

	ev->name = "gil_hold";
	ev->dur = h->dur;
	return 1;
}

void gil_version_str(__u32 v, char *buf, size_t len)
{
	if (!v)
		snprintf(buf, len, "unknown");
	else if (!(v & 0xffff))
		snprintf(buf, len, "%u.%u", v >> 24, v >> 16 & 0xff);
	else
		snprintf(buf, len, "%u.%u.%u", v >> 24, v >> 16 & 0xff, v >> 8 & 0xff);
}

/* One instant per look at a process: how it is measured, and what that cannot see. */
static int decode_proc(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_proc *p = (const void *)rec;
	const char *s;

	ev->name = "gil_python";
	gil_version_str(p->py_version, ev->namebuf, sizeof(ev->namebuf));
	event__arg_str(ev, "python", ev->namebuf);
	event__arg_str(ev, "method", gil_method_name(p->method));
	if ((s = trace_model__string(m, p->object_id)))
		event__arg_str(ev, "object", s);
	event__arg_hex(ev, "gil", p->gil_addr);
	event__arg_u64(ev, "free_threaded", !!(p->flags & BS_GIL_PROC_FREE_THREADED));
	event__arg_u64(ev, "mutex", !!(p->flags & BS_GIL_PROC_MUTEX));
	event__arg_u64(ev, "holder", !!(p->flags & BS_GIL_PROC_HOLDER));
	event__arg_u64(ev, "verified", !!(p->flags & BS_GIL_PROC_VERIFIED));
	if ((s = trace_model__string(m, p->note_id)))
		event__arg_str(ev, "note", s);
	return 1;
}

/* The short waits' histogram's keys in a gil_agg row. */
static const char *const gil_hist_keys[BS_GIL_HIST] = {
	"h0",  "h1",  "h2",  "h3",  "h4",  "h5",  "h6",	 "h7",	"h8",  "h9",  "h10",
	"h11", "h12", "h13", "h14", "h15", "h16", "h17", "h18", "h19", "h20", "h21",
	"h22", "h23", "h24", "h25", "h26", "h27", "h28", "h29", "h30", "h31",
};

/*
 * A thread's snapshot of its waits and holds as a row (ClickHouse's gil_sum reads the last
 * one per thread, as gil_data__add keeps it): the totals, the threshold, and the short waits
 * by log2 bucket, h0 to h31.
 */
static int row_gil_agg(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_agg *a = (const void *)rec;

	ev->name = "gil_agg";
	event__arg_u64(ev, "threshold_ns", a->threshold_ns);
	event__arg_u64(ev, "wait_count", a->v.wait_count);
	event__arg_u64(ev, "wait_total_ns", a->v.wait_total_ns);
	event__arg_u64(ev, "wait_max_ns", a->v.wait_max_ns);
	event__arg_u64(ev, "hold_count", a->v.hold_count);
	event__arg_u64(ev, "hold_total_ns", a->v.hold_total_ns);
	event__arg_u64(ev, "hold_max_ns", a->v.hold_max_ns);
	for (int i = 0; i < BS_GIL_HIST; i++)
		event__arg_u64(ev, gil_hist_keys[i], a->v.short_hist[i]);
	return 1;
}

/*
 * A waiter's snapshot of its waits by holder as a row (ClickHouse's gil_blocked_by reads the
 * last one per waiter and holder, as gil_data__add keeps it): the holder, the count, the time.
 */
static int row_gil_blame(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_blame *b = (const void *)rec;

	ev->name = "gil_blame";
	event__arg_u64(ev, "holder_tid", b->holder_tid);
	event__arg_u64(ev, "count", b->count);
	event__arg_u64(ev, "total_ns", b->total_ns);
	return 1;
}

/*
 * --stacks=gil: a round of waits with the holder's stack (`gil_holder`, its dur and the part
 * the holder's samples covered) and a holder's timer sample (`gil_sample`, the waiting it
 * stands for), as rows, their stacks named by stack_id: the server's gil_stacks weighs the
 * holders' code by them (gil_holder_ns).
 */
static int row_gil_holder(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_holder *h = (const void *)rec;

	ev->stack = trace_model__event_stack(m, rec);
	ev->dur = h->dur;
	event__arg_u64(ev, "holder_tid", h->holder_tid);
	event__arg_u64(ev, "covered_us", h->covered_us);
	return 1;
}

static int row_gil_sample(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_gil_sample *g = (const void *)rec;

	ev->stack = trace_model__event_stack(m, rec);
	ev->dur = g->dur;
	event__arg_u64(ev, "waiters", g->waiters);
	event__arg_u64(ev, "period_us", g->period_us);
	return 1;
}

/* Kineto has no GIL category (torch.profiler does not see the GIL): the gil family's. */
static const struct export_style wait_style = {
	.cat = "gil",
	.ph = 'X',
	.track = "GIL waits",
	.desc = "Waits of this thread for the Python GIL (gil family) that lasted at least the "
		"recording's threshold (50 us); shorter ones are only counted (bpfsight stats -r "
		"gil_sum). holder = the thread that held the GIL when the wait began, rounds = the 5 "
		"ms condition waits it took, handoff = the holder changed meanwhile (bpfsight stats "
		"-r gil_blocked_by splits the time between holders).",
};
static const struct export_style hold_style = {
	.cat = "gil",
	.ph = 'X',
	.track = "GIL holds",
	.desc = "Times this thread held the Python GIL (--gil-mode=full), from take_gil's return "
		"to drop_gil, of at least the recording's threshold (50 us); shorter ones are only "
		"counted (bpfsight stats -r gil_sum).",
};
static const struct export_style python_style = { .cat = "gil", .ph = 'i' };

const struct rec_decoder gil_decoders[] = {
	{ BS_REC_GIL_WAIT, sizeof(struct bs_gil_wait), "gil_wait", decode_wait, &wait_style,
	  .task_offs = { offsetof(struct bs_gil_wait, holder_tid) }, .span = 1 },
	{ BS_REC_GIL_HOLD, sizeof(struct bs_gil_hold), "gil_hold", decode_hold, &hold_style,
	  .span = 1 },
	/* Cumulative snapshots: only the reports read them. */
	{ BS_REC_GIL_AGG, sizeof(struct bs_gil_agg), "gil_agg", family__decode_meta,
	  .row = row_gil_agg },
	{ BS_REC_GIL_BLAME, sizeof(struct bs_gil_blame), "gil_blame", family__decode_meta,
	  .task_offs = { offsetof(struct bs_gil_blame, holder_tid) }, .row = row_gil_blame },
	{ BS_REC_GIL_PROC, sizeof(struct bs_gil_proc), "gil_python", decode_proc, &python_style,
	  .string_offs = { offsetof(struct bs_gil_proc, object_id),
			   offsetof(struct bs_gil_proc, note_id) } },
	/* Rounds of waits with the holder's stack: gil_stacks reads them. */
	{ BS_REC_GIL_HOLDER, sizeof(struct bs_gil_holder), "gil_holder", family__decode_meta,
	  .task_offs = { offsetof(struct bs_gil_holder, holder_tid) }, .row = row_gil_holder },
	/* Timer samples of holders others waited for: gil_stacks weighs the holders' code by them. */
	{ BS_REC_GIL_SAMPLE, sizeof(struct bs_gil_sample), "gil_sample", family__decode_meta,
	  .row = row_gil_sample },
	{ 0 },
};

/* ---- what every gil report collects in one pass ---- */

struct gil_thread {
	struct samples waits; /* exact durations of the waits with a record */
	__u64 ev_count, ev_total, ev_max;
	/* waits still open at a dump's cut (BS_GIL_WAIT_OPEN): the aggregate has them not */
	__u64 open_count, open_total, open_max;
	__u64 hold_ev_count, hold_ev_total;
	int has_agg;
	__u64 threshold;
	struct bs_gil_agg_val agg; /* the last snapshot */
	__u64 born, died;	   /* FORK / EXIT time, 0 = not seen */
};

struct gil_pinfo {
	int seen; /* a GIL_PROC record */
	struct bs_gil_proc last;
};

struct gil_data {
	struct hmap *threads;  /* {pid, tid} -> struct gil_thread */
	struct hmap *procs;    /* {pid, 0} -> struct gil_pinfo */
	struct hmap *blame;    /* {pid << 32 | waiter, holder} -> struct bs_gil_blame_val */
	struct hmap *ev_blame; /* the same from wait records, when no BLAME record came */
	/* the open waits' current segments (bs_gil_wait_open): no BLAME record has them yet */
	struct hmap *open_blame;
	__u64 first_ts, last_ts;
	int err;
};

static void *gil_data__new(void)
{
	struct gil_data *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->threads = hmap__new(sizeof(struct gil_thread));
	d->procs = hmap__new(sizeof(struct gil_pinfo));
	d->blame = hmap__new(sizeof(struct bs_gil_blame_val));
	d->ev_blame = hmap__new(sizeof(struct bs_gil_blame_val));
	d->open_blame = hmap__new(sizeof(struct bs_gil_blame_val));
	if (!d->threads || !d->procs || !d->blame || !d->ev_blame || !d->open_blame) {
		hmap__free(d->threads);
		hmap__free(d->procs);
		hmap__free(d->blame);
		hmap__free(d->ev_blame);
		hmap__free(d->open_blame);
		free(d);
		return NULL;
	}
	return d;
}

static void gil_data__free(void *vd)
{
	struct gil_data *d = vd;
	struct gil_thread *th;
	size_t it = 0;

	if (!d)
		return;
	while ((th = hmap__next(d->threads, &it, NULL)))
		samples__free(&th->waits);
	hmap__free(d->threads);
	hmap__free(d->procs);
	hmap__free(d->blame);
	hmap__free(d->ev_blame);
	hmap__free(d->open_blame);
	free(d);
}

static struct gil_thread *thread_of(struct gil_data *d, __u32 pid, __u32 tid)
{
	struct gil_thread *th = hmap__get(d->threads, (struct hkey){ pid, tid }, 1);

	if (!th)
		d->err = -ENOMEM;
	return th;
}

static void blame_add(struct gil_data *d, struct hmap *h, __u32 pid, __u32 waiter, __u32 holder,
		      __u64 count, __u64 total, int replace)
{
	struct bs_gil_blame_val *v;

	v = hmap__get(h, (struct hkey){ (__u64)pid << 32 | waiter, holder }, 1);
	if (!v) {
		d->err = -ENOMEM;
		return;
	}
	if (replace) {
		v->count = count;
		v->total_ns = total;
	} else {
		v->count += count;
		v->total_ns += total;
	}
}

/* A wait open at a dump's cut: all its blame (none is in a BLAME record yet). */
static void open_blame_add(struct gil_data *d, const struct bs_gil_wait_open *o)
{
	const struct bs_hdr *h = &o->w.h;
	__u64 end = h->ts + o->w.dur;

	for (int i = 0; i < BS_GIL_PEND; i++)
		if (o->pend_count[i])
			blame_add(d, d->open_blame, h->pid, h->tid, o->pend_holder[i],
				  o->pend_count[i], o->pend_ns[i], 0);
	if (o->seg_start >= h->ts && o->seg_start <= end)
		blame_add(d, d->open_blame, h->pid, h->tid, o->seg_holder, 1, end - o->seg_start,
			  0);
}

static void gil_data__add(void *vd, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_gil_wait *w = (const void *)rec;
	const struct bs_gil_wait_open *o = (const void *)rec;
	const struct bs_gil_hold *h = (const void *)rec;
	const struct bs_gil_agg *a = (const void *)rec;
	const struct bs_gil_blame *b = (const void *)rec;
	const struct bs_fork *f = (const void *)rec;
	struct gil_data *d = vd;
	struct gil_thread *th;
	struct gil_pinfo *pi;

	/* A process's Python, found while the recorder set up, is before the window: no life. */
	__u64 ts = rec->ts && rec->ts < trace_model__start(m) ? trace_model__start(m) : rec->ts;

	if (ts && (!d->first_ts || ts < d->first_ts))
		d->first_ts = ts;
	if (ts > d->last_ts)
		d->last_ts = ts;
	switch (rec->type) {
	case BS_REC_GIL_WAIT:
		if ((th = thread_of(d, rec->pid, rec->tid))) {
			if (samples__add(&th->waits, (double)w->dur, 1))
				d->err = -ENOMEM;
			th->ev_count++;
			th->ev_total += w->dur;
			if (w->dur > th->ev_max)
				th->ev_max = w->dur;
			if (w->flags & BS_GIL_WAIT_OPEN) {
				th->open_count++;
				th->open_total += w->dur;
				if (w->dur > th->open_max)
					th->open_max = w->dur;
			}
		}
		blame_add(d, d->ev_blame, rec->pid, rec->tid, w->holder_tid, 1, w->dur, 0);
		if ((w->flags & BS_GIL_WAIT_OPEN) && rec->size >= sizeof(*o))
			open_blame_add(d, o);
		if (rec->ts + w->dur > d->last_ts)
			d->last_ts = rec->ts + w->dur;
		break;
	case BS_REC_GIL_HOLD:
		if ((th = thread_of(d, rec->pid, rec->tid))) {
			th->hold_ev_count++;
			th->hold_ev_total += h->dur;
		}
		break;
	case BS_REC_GIL_AGG:
		if ((th = thread_of(d, rec->pid, rec->tid))) {
			th->has_agg = 1;
			th->threshold = a->threshold_ns;
			th->agg = a->v;
		}
		break;
	case BS_REC_GIL_BLAME:
		blame_add(d, d->blame, rec->pid, rec->tid, b->holder_tid, b->count, b->total_ns, 1);
		break;
	case BS_REC_GIL_PROC:
		pi = hmap__get(d->procs, (struct hkey){ rec->pid, 0 }, 1);
		if (!pi) {
			d->err = -ENOMEM;
			break;
		}
		pi->seen = 1;
		pi->last = *(const struct bs_gil_proc *)rec;
		break;
	case BS_REC_THREAD:
		thread_of(d, rec->pid, rec->tid);
		break;
	case BS_REC_FORK:
		if (rec->size >= sizeof(*f) && (th = thread_of(d, f->child_pid, f->child_tid)))
			th->born = rec->ts;
		break;
	case BS_REC_EXIT:
		th = hmap__get(d->threads, (struct hkey){ rec->pid, rec->tid }, 0);
		if (th)
			th->died = rec->ts;
		break;
	default:
		break;
	}
}

/* ---- gil_sum ---- */

struct sum_row {
	__u32 pid, tid;
	struct gil_thread *th;
	__u64 count, total, max;
};

static int sum_row_cmp(const void *a, const void *b)
{
	const struct sum_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The short waits of a histogram as samples at their bucket's middle, capped by the threshold. */
static int add_hist(struct samples *s, const struct bs_gil_agg_val *a, __u64 threshold)
{
	for (int i = 0; i < BS_GIL_HIST; i++) {
		double lo = i ? (double)(1ull << i) : 0, hi = (double)(1ull << (i + 1));

		if (!a->short_hist[i])
			continue;
		if (threshold && hi > (double)threshold)
			hi = (double)threshold;
		if (hi < lo)
			hi = lo;
		if (samples__add(s, (lo + hi) / 2, a->short_hist[i]))
			return -ENOMEM;
	}
	return 0;
}

static int gil_sum__emit(void *vd, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_TID,
		C_THREAD_NAME,
		C_WAIT_COUNT,
		C_WAIT_TOTAL,
		C_WAIT_P50,
		C_WAIT_P99,
		C_WAIT_MAX,
		C_CONTENTION_PCT,
		C_METHOD,
		C_HOLD_COUNT,
		C_HOLD_TOTAL,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_TID] = { "tid", "TID", TABLE_U64 },
		[C_THREAD_NAME] = { "thread_name", "Thread", TABLE_STR },
		/* A thread that never waited (nor held, in full mode) has nothing to show. */
		[C_WAIT_COUNT] = { "wait_count", "Waits", TABLE_U64, TABLE_COL_WEIGHT },
		[C_WAIT_TOTAL] = { "wait_total_ns", "Wait Total (ns)", TABLE_U64 },
		[C_WAIT_P50] = { "wait_p50_ns", "Wait P50 (ns)", TABLE_DOUBLE },
		[C_WAIT_P99] = { "wait_p99_ns", "Wait P99 (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },
		[C_WAIT_MAX] = { "wait_max_ns", "Wait Max (ns)", TABLE_U64 },
		[C_CONTENTION_PCT] = { "contention_pct", "Contention (%)", TABLE_DOUBLE },
		[C_METHOD] = { "method", "Method", TABLE_STR, TABLE_COL_MINOR },
		/* full mode's only: last, so that without them the table is the lines above */
		[C_HOLD_COUNT] = { "hold_count", "Holds", TABLE_U64, TABLE_COL_WEIGHT },
		[C_HOLD_TOTAL] = { "hold_total_ns", "Hold Total (ns)", TABLE_U64 },
	};
	struct gil_data *d = vd;
	struct gil_thread *th;
	struct gil_pinfo *pi;
	struct sum_row *rows;
	size_t it = 0, n = 0, i;
	struct hkey key;
	int full = 0, err;

	if (d->err)
		return d->err;
	rows = calloc(hmap__count(d->threads) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((th = hmap__next(d->threads, &it, &key))) {
		pi = hmap__get(d->procs, (struct hkey){ key.a, 0 }, 0);
		/* Threads of python processes only (and any that has GIL data at all). */
		if (!(pi && pi->seen) && !th->has_agg && !th->ev_count)
			continue;
		if (pi && pi->last.method == BS_GIL_METHOD_TAKE_GIL)
			full = 1;
		if (th->has_agg && (th->agg.hold_count || th->hold_ev_count))
			full = 1;
		rows[n].pid = (__u32)key.a;
		rows[n].tid = (__u32)key.b;
		rows[n].th = th;
		/*
		 * The aggregate has every wait that ended, and a dump's open ones are added to it;
		 * without one (a cut trace) the records are all.
		 */
		rows[n].count = th->has_agg ? th->agg.wait_count + th->open_count : th->ev_count;
		rows[n].total = th->has_agg ? th->agg.wait_total_ns + th->open_total : th->ev_total;
		rows[n].max = th->has_agg ? th->agg.wait_max_ns : th->ev_max;
		if (rows[n].max < th->open_max)
			rows[n].max = th->open_max;
		n++;
	}
	qsort(rows, n, sizeof(*rows), sum_row_cmp);

	table__add_cols(t, cols, full ? NCOLS : C_HOLD_COUNT);
	for (i = 0; i < n; i++) {
		const struct sum_row *r = &rows[i];
		__u64 born, died, wall;
		const char *name;

		th = r->th;
		if (th->has_agg && (err = add_hist(&th->waits, &th->agg, th->threshold)))
			goto out;
		pi = hmap__get(d->procs, (struct hkey){ r->pid, 0 }, 0);
		born = th->born && th->born > d->first_ts ? th->born : d->first_ts;
		died = th->died && th->died < d->last_ts ? th->died : d->last_ts;
		if (trace_model__end(m) && trace_model__end(m) < died)
			died = trace_model__end(m); /* a wait the stop drained ends at the end */
		wall = died > born ? died - born : 0;
		name = trace_model__thread_name(m, r->tid);
		table__row(t);
		table__set_u64(t, C_PID, r->pid);
		table__set_u64(t, C_TID, r->tid);
		table__set_str(t, C_THREAD_NAME, name ? name : "");
		table__set_u64(t, C_WAIT_COUNT, r->count);
		table__set_u64(t, C_WAIT_TOTAL, r->total);
		table__set_double(t, C_WAIT_P50,
				  th->waits.count ? samples__percentile(&th->waits, 50) : 0);
		table__set_double(t, C_WAIT_P99,
				  th->waits.count ? samples__percentile(&th->waits, 99) : 0);
		table__set_u64(t, C_WAIT_MAX, r->max);
		table__set_double(t, C_CONTENTION_PCT, wall ? r->total * 100.0 / wall : 0);
		table__set_str(t, C_METHOD, gil_method_name(pi && pi->seen ? pi->last.method : 0));
		if (full) {
			table__set_u64(t, C_HOLD_COUNT,
				       th->has_agg ? th->agg.hold_count : th->hold_ev_count);
			table__set_u64(t, C_HOLD_TOTAL,
				       th->has_agg ? th->agg.hold_total_ns : th->hold_ev_total);
		}
	}
	err = table__err(t);
out:
	free(rows);
	return err;
}

static const struct report gil_sum = {
	.name = "gil_sum",
	.desc = "Python GIL Contention Summary",
	.new = gil_data__new,
	.add = gil_data__add,
	.emit = gil_sum__emit,
	.free = gil_data__free,
};

/* ---- gil_blocked_by ---- */

struct blame_row {
	__u32 pid, waiter, holder;
	struct bs_gil_blame_val v;
};

static int blame_row_cmp(const void *a, const void *b)
{
	const struct blame_row *x = a, *y = b;

	if (x->v.total_ns != y->v.total_ns)
		return x->v.total_ns < y->v.total_ns ? 1 : -1;
	if (x->waiter != y->waiter)
		return x->waiter < y->waiter ? -1 : 1;
	return (x->holder > y->holder) - (x->holder < y->holder);
}

/*
 * Who made each waiter wait, from what gil_sum counts its waits by: the in-kernel totals for
 * a waiter that has them (BLAME, and a dump's open waits' blame), else its wait records. So
 * the two reports agree waiter by waiter, also where a thread's totals never came (a wait
 * that ended after the last read of them, in a dump's window).
 */
static struct hmap *blame_by_waiter(struct gil_data *d)
{
	struct hmap *h = hmap__new(sizeof(struct bs_gil_blame_val));
	/* A trace without BLAME records (before them): the records, for everyone. */
	int totals = hmap__count(d->blame) > 0;
	const struct hmap *from[] = { d->blame, d->open_blame, d->ev_blame };
	struct bs_gil_blame_val *v;
	struct hkey key;

	for (int k = 0; h && k < 3; k++)
		for (size_t it = 0; (v = hmap__next((struct hmap *)from[k], &it, &key));) {
			struct gil_thread *th = hmap__get(
				d->threads, (struct hkey){ key.a >> 32, (__u32)key.a }, 0);
			int agg = totals && th && th->has_agg;

			if ((k < 2) == agg)
				blame_add(d, h, key.a >> 32, (__u32)key.a, (__u32)key.b, v->count,
					  v->total_ns, 0);
		}
	return h;
}

static int gil_blocked_by__emit(void *vd, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_WAITER_TID,
		C_WAITER_NAME,
		C_HOLDER_TID,
		C_HOLDER_NAME,
		C_WAIT_COUNT,
		C_TOTAL,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_WAITER_TID] = { "waiter_tid", "Waiter TID", TABLE_U64 },
		[C_WAITER_NAME] = { "waiter_name", "Waiter", TABLE_STR },
		[C_HOLDER_TID] = { "holder_tid", "Holder TID", TABLE_U64 },
		[C_HOLDER_NAME] = { "holder_name", "Holder", TABLE_STR },
		[C_WAIT_COUNT] = { "wait_count", "Waits", TABLE_U64 },
		[C_TOTAL] = { "total_ns", "Total (ns)", TABLE_U64 },
	};
	struct gil_data *d = vd;
	struct hmap *h;
	struct bs_gil_blame_val *v;
	struct blame_row *rows;
	struct hkey key;
	size_t n = 0, i;
	int err;

	if (d->err)
		return d->err;
	h = blame_by_waiter(d);
	if (!h)
		return d->err ? d->err : -ENOMEM;
	rows = calloc(hmap__count(h) + 1, sizeof(*rows));
	for (size_t it = 0; rows && (v = hmap__next(h, &it, &key));) {
		if (!v->count)
			continue;
		rows[n].pid = key.a >> 32;
		rows[n].waiter = (__u32)key.a;
		rows[n].holder = (__u32)key.b;
		rows[n].v = *v;
		n++;
	}
	hmap__free(h);
	if (!rows)
		return -ENOMEM;
	qsort(rows, n, sizeof(*rows), blame_row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < n; i++) {
		const char *wn = trace_model__thread_name(m, rows[i].waiter);
		const char *hn =
			rows[i].holder ? trace_model__thread_name(m, rows[i].holder) : NULL;

		table__row(t);
		table__set_u64(t, C_PID, rows[i].pid);
		table__set_u64(t, C_WAITER_TID, rows[i].waiter);
		table__set_str(t, C_WAITER_NAME, wn ? wn : "");
		table__set_u64(t, C_HOLDER_TID, rows[i].holder);
		table__set_str(t, C_HOLDER_NAME, hn ? hn : rows[i].holder ? "" : "(unknown)");
		table__set_u64(t, C_WAIT_COUNT, rows[i].v.count);
		table__set_u64(t, C_TOTAL, rows[i].v.total_ns);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static const struct report gil_blocked_by = {
	.name = "gil_blocked_by",
	.desc = "Python GIL: Who Made Whom Wait",
	.new = gil_data__new,
	.add = gil_data__add,
	.emit = gil_blocked_by__emit,
	.free = gil_data__free,
};

/* ---- gil_procs ---- */

static int pid_cmp(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return (x > y) - (x < y);
}

static int gil_procs__emit(void *vd, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_PROCESS,
		C_PYTHON,
		C_METHOD,
		C_FREE_THREADED,
		C_MUTEX,
		C_HOLDER,
		C_VERIFIED,
		C_OBJECT,
		C_NOTE,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_PYTHON] = { "python", "Python", TABLE_STR },
		[C_METHOD] = { "method", "Method", TABLE_STR },
		[C_FREE_THREADED] = { "free_threaded", "Free-threaded", TABLE_U64,
				      TABLE_COL_MINOR },
		[C_MUTEX] = { "mutex", "Mutex Waits", TABLE_U64, TABLE_COL_MINOR },
		[C_HOLDER] = { "holder", "Holders", TABLE_U64, TABLE_COL_MINOR },
		[C_VERIFIED] = { "verified", "Verified", TABLE_U64, TABLE_COL_MINOR },
		[C_OBJECT] = { "object", "Interpreter", TABLE_STR, TABLE_COL_PATH },
		[C_NOTE] = { "note", "Cannot See", TABLE_STR },
	};
	struct gil_data *d = vd;
	struct gil_pinfo *pi;
	size_t it = 0, n = 0, i;
	struct hkey key;
	__u32 *pids;
	char ver[32];
	int err;

	if (d->err)
		return d->err;
	pids = calloc(hmap__count(d->procs) + 1, sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	while ((pi = hmap__next(d->procs, &it, &key)))
		if (pi->seen)
			pids[n++] = (__u32)key.a;
	qsort(pids, n, sizeof(*pids), pid_cmp);
	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < n; i++) {
		const struct bs_gil_proc *p;
		const char *s;

		pi = hmap__get(d->procs, (struct hkey){ pids[i], 0 }, 0);
		p = &pi->last;
		gil_version_str(p->py_version, ver, sizeof(ver));
		table__row(t);
		table__set_u64(t, C_PID, pids[i]);
		s = trace_model__process_name(m, pids[i]);
		table__set_str(t, C_PROCESS, s ? s : "");
		table__set_str(t, C_PYTHON, ver);
		table__set_str(t, C_METHOD, gil_method_name(p->method));
		table__set_u64(t, C_FREE_THREADED, !!(p->flags & BS_GIL_PROC_FREE_THREADED));
		table__set_u64(t, C_MUTEX, !!(p->flags & BS_GIL_PROC_MUTEX));
		table__set_u64(t, C_HOLDER, !!(p->flags & BS_GIL_PROC_HOLDER));
		table__set_u64(t, C_VERIFIED, !!(p->flags & BS_GIL_PROC_VERIFIED));
		s = trace_model__string(m, p->object_id);
		table__set_str(t, C_OBJECT, s ? s : "");
		s = trace_model__string(m, p->note_id);
		table__set_str(t, C_NOTE, s ? s : "");
	}
	err = table__err(t);
	free(pids);
	return err;
}

static const struct report gil_procs = {
	.name = "gil_procs",
	.desc = "Python Processes and How Their GIL Was Measured",
	.new = gil_data__new,
	.add = gil_data__add,
	.emit = gil_procs__emit,
	.free = gil_data__free,
	/* How each python's GIL was measured, and what that cannot see. */
	.info = &(const struct report_info){ "python", "python" },
};

const struct report *const gil_reports[] = { &gil_sum, &gil_blocked_by, &gil_procs, &gil_stacks,
					     NULL };

/* Per-thread totals: counts, totals and the histogram less the base; maxima stay whole. */
static __u64 thread_key(const struct bs_hdr *rec)
{
	return 0;
}

static __u64 less(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

static void agg_since(struct bs_hdr *rec, const struct bs_hdr *base)
{
	struct bs_gil_agg_val *a = &((struct bs_gil_agg *)rec)->v;
	const struct bs_gil_agg_val *b = &((const struct bs_gil_agg *)base)->v;

	a->wait_count = less(a->wait_count, b->wait_count);
	a->wait_total_ns = less(a->wait_total_ns, b->wait_total_ns);
	a->hold_count = less(a->hold_count, b->hold_count);
	a->hold_total_ns = less(a->hold_total_ns, b->hold_total_ns);
	for (int i = 0; i < BS_GIL_HIST; i++)
		a->short_hist[i] = less(a->short_hist[i], b->short_hist[i]);
}

static __u64 blame_key(const struct bs_hdr *rec)
{
	return ((const struct bs_gil_blame *)rec)->holder_tid;
}

static void blame_since(struct bs_hdr *rec, const struct bs_hdr *base)
{
	struct bs_gil_blame *a = (void *)rec;
	const struct bs_gil_blame *b = (const void *)base;

	a->count = less(a->count, b->count);
	a->total_ns = less(a->total_ns, b->total_ns);
}

const struct family_cumulative gil_cumulative[] = {
	{ BS_REC_GIL_AGG, sizeof(struct bs_gil_agg), thread_key, NULL, agg_since },
	{ BS_REC_GIL_BLAME, sizeof(struct bs_gil_blame), blame_key, NULL, blame_since },
	{ 0 },
};
