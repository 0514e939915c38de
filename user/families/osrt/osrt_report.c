// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of osrt: syscall events and the osrt_sum report (nsys's osrt_sum). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "osrt.h"
#include "stats_math.h"
#include "hmap.h"
#include "syscall_names.h"
#include "table.h"
#include "time_sum.h"

/* NAMEBUF holds "syscall_N" for numbers the table does not know. */
static const char *osrt__name(__u32 nr, char *namebuf, size_t len)
{
	const char *name = syscall_name(nr);

	if (name)
		return name;
	snprintf(namebuf, len, "syscall_%u", nr);
	return namebuf;
}

static int decode_syscall(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_syscall *s = (const void *)rec;

	ev->name = osrt__name(s->nr, ev->namebuf, sizeof(ev->namebuf));
	ev->dur = s->dur;
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=osrt */
	event__arg_u64(ev, "nr", s->nr);
	if (s->flags & BS_SYSCALL_OPEN)
		event__arg_bool(ev, "in_flight", 1); /* still in it at the end: no return value */
	else if (!(s->flags & BS_SYSCALL_BLOCKED))
		event__arg_s64(ev, "ret", s->ret);
	if (s->flags & BS_SYSCALL_BLOCKED)
		event__arg_bool(ev, "blocked", 1); /* --osrt-mode blocked: one sleep of the call */
	return 1;
}

/*
 * A snapshot of the short calls' aggregate as a row (ClickHouse's osrt_sum reads them as
 * osrt_sum__add does: per thread and call, every final one and the last one if not final).
 */
static int row_syscall_agg(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_syscall_agg *a = (const void *)rec;

	ev->name = osrt__name(a->nr, ev->namebuf, sizeof(ev->namebuf));
	event__arg_u64(ev, "nr", a->nr);
	event__arg_u64(ev, "count", a->count);
	event__arg_u64(ev, "total_ns", a->total_ns);
	event__arg_u64(ev, "min_ns", a->min_ns);
	event__arg_u64(ev, "max_ns", a->max_ns);
	event__arg_u64(ev, "final", !!(a->flags & BS_AGG_FINAL));
	if (a->flags & BS_AGG_BLOCKED)
		event__arg_bool(ev, "blocked", 1);
	return 1;
}

static const struct export_style syscall_style = {
	.cat = "os_runtime",
	.ph = 'X',
	.track = "syscalls",
	.desc = "System calls of this thread that lasted at least the recording's --osrt-threshold "
		"(osrt). Shorter ones are only counted (bpfsight stats -r osrt_sum).",
};

const struct rec_decoder osrt_decoders[] = {
	{ BS_REC_SYSCALL, sizeof(struct bs_syscall), "syscall", decode_syscall, &syscall_style,
	  .span = 1 },
	/* A cumulative snapshot, not a call: only osrt_sum reads it. */
	{ BS_REC_SYSCALL_AGG, sizeof(struct bs_syscall_agg), "syscall_agg", family__decode_meta,
	  .row = row_syscall_agg },
	{ 0 },
};

/*
 * osrt_sum. Calls reach the trace two disjoint ways: one BS_REC_SYSCALL per call at or above
 * the recording threshold, and in-kernel aggregates (count, total, min, max) of the shorter
 * ones, as cumulative snapshots per (pid, tid, nr) of which only the last counts. count,
 * total, min and max are exact over both. The median and stddev are exact over the individual
 * calls; the durations of aggregated calls are unknown, so each aggregate stands in as COUNT
 * samples at its mean (total / count). With a threshold that keeps the aggregated calls short,
 * this moves the median and stddev little; it is the best estimate the trace allows.
 */
struct osrt_nr {
	struct samples samples;
	__u64 count, total, min, max;
};

struct osrt_sum {
	struct hmap *by_nr;    /* {nr, 0} -> struct osrt_nr (individual calls) */
	struct hmap *last_agg; /* {pid << 32 | tid, nr} -> struct bs_syscall_agg_val */
	int blocked;	       /* --osrt-mode blocked's records: sleeps, not calls */
	int err;
};

static void *osrt_sum__new(void)
{
	struct osrt_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->by_nr = hmap__new(sizeof(struct osrt_nr));
	st->last_agg = hmap__new(sizeof(struct bs_syscall_agg_val));
	if (!st->by_nr || !st->last_agg) {
		hmap__free(st->by_nr);
		hmap__free(st->last_agg);
		free(st);
		return NULL;
	}
	return st;
}

static void osrt_nr__add(struct osrt_nr *n, __u64 count, __u64 total, __u64 min, __u64 max)
{
	if (!n->count || min < n->min)
		n->min = min;
	if (!n->count || max > n->max)
		n->max = max;
	n->count += count;
	n->total += total;
}

/* An aggregate's calls, as COUNT samples of their mean (the kernel keeps no distribution). */
static int osrt_nr__add_agg(struct osrt_sum *st, __u32 nr, __u64 count, __u64 total, __u64 min,
			    __u64 max)
{
	struct osrt_nr *n = hmap__get(st->by_nr, (struct hkey){ nr, 0 }, 1);

	if (!n || samples__add(&n->samples, (double)total / count, count))
		return -ENOMEM;
	osrt_nr__add(n, count, total, min, max);
	return 0;
}

static void osrt_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_syscall_agg *a = (const void *)rec;
	const struct bs_syscall *s = (const void *)rec;
	struct bs_syscall_agg_val *v;
	struct osrt_sum *st = vst;
	struct osrt_nr *n;

	/* Our own probes' returns, in traces from before osrt left them out (osrt_records.h). */
	if ((rec->type == BS_REC_SYSCALL && s->nr == BS_NR_URETPROBE_X86_64) ||
	    (rec->type == BS_REC_SYSCALL_AGG && a->nr == BS_NR_URETPROBE_X86_64))
		return;
	if ((rec->type == BS_REC_SYSCALL && (s->flags & BS_SYSCALL_BLOCKED)) ||
	    (rec->type == BS_REC_SYSCALL_AGG && (a->flags & BS_AGG_BLOCKED)))
		st->blocked = 1;
	switch (rec->type) {
	case BS_REC_SYSCALL:
		n = hmap__get(st->by_nr, (struct hkey){ s->nr, 0 }, 1);
		if (!n || samples__add(&n->samples, (double)s->dur, 1)) {
			st->err = -ENOMEM;
			return;
		}
		osrt_nr__add(n, 1, s->dur, s->dur, s->dur);
		break;
	case BS_REC_SYSCALL_AGG:
		/* Cumulative: a later snapshot of the same key replaces the earlier one. */
		v = hmap__get(st->last_agg,
			      (struct hkey){ (__u64)rec->pid << 32 | rec->tid, a->nr }, 1);
		if (!v) {
			st->err = -ENOMEM;
			return;
		}
		if (a->flags & BS_AGG_FINAL) {
			/* Closed (thread exited): count it now; a recycled tid starts over. */
			v->count = 0;
			if (a->count && osrt_nr__add_agg(st, a->nr, a->count, a->total_ns,
							 a->min_ns, a->max_ns))
				st->err = -ENOMEM;
			return;
		}
		v->count = a->count;
		v->total_ns = a->total_ns;
		v->min_ns = a->min_ns;
		v->max_ns = a->max_ns;
		break;
	default:
		break;
	}
}

struct osrt_row {
	char name[32]; /* a copy: rows move while sorting */
	struct osrt_nr *n;
};

static int osrt_row_cmp(const void *a, const void *b)
{
	const struct osrt_row *x = a, *y = b;

	/* nsys orders by total time, descending; ties by name keep the output stable. */
	if (x->n->total != y->n->total)
		return x->n->total < y->n->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int osrt_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum { C_NAME = TIME_SUM_NCOLS, NCOLS };
	static const struct table_col cols[NCOLS] = {
		TIME_SUM_COLS("Num Calls"),
		[C_NAME] = { "name", "Name", TABLE_STR },
	};
	struct osrt_row *rows = NULL;
	struct osrt_sum *st = vst;
	struct bs_syscall_agg_val *v;
	size_t it = 0, nrows = 0, i;
	long double grand = 0;
	struct osrt_nr *n;
	char namebuf[32];
	struct hkey key;
	int err;

	if (st->err)
		return st->err;
	while ((v = hmap__next(st->last_agg, &it, &key))) {
		if (!v->count)
			continue;
		err = osrt_nr__add_agg(st, key.b, v->count, v->total_ns, v->min_ns, v->max_ns);
		if (err)
			return err;
	}

	rows = calloc(hmap__count(st->by_nr) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	it = 0;
	while ((n = hmap__next(st->by_nr, &it, &key))) {
		if (!n->count)
			continue;
		rows[nrows].n = n;
		snprintf(rows[nrows].name, sizeof(rows[nrows].name), "%s",
			 osrt__name((__u32)key.a, namebuf, sizeof(namebuf)));
		grand += n->total;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), osrt_row_cmp);

	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < nrows; i++) {
		n = rows[i].n;
		table__row(t);
		time_sum__set(t, n->count, n->total, n->min, n->max, &n->samples, grand);
		table__set_str(t, C_NAME, rows[i].name);
	}
	if (st->blocked)
		table__add_note(t,
				"recorded with --osrt-mode blocked: Num Calls counts the times a "
				"call slept and the times are its time asleep; calls that never "
				"slept are not in the trace");
	err = table__err(t);
	free(rows);
	return err;
}

static void osrt_sum__free(void *vst)
{
	struct osrt_sum *st = vst;
	struct osrt_nr *n;
	size_t it = 0;

	if (!st)
		return;
	while ((n = hmap__next(st->by_nr, &it, NULL)))
		samples__free(&n->samples);
	hmap__free(st->by_nr);
	hmap__free(st->last_agg);
	free(st);
}

static const struct report osrt_sum = {
	.name = "osrt_sum",
	.desc = "OS Runtime Summary",
	.new = osrt_sum__new,
	.add = osrt_sum__add,
	.emit = osrt_sum__emit,
	.free = osrt_sum__free,
};

const struct report *const osrt_reports[] = { &osrt_sum, NULL };

/* Short calls' totals per (pid, tid, syscall): min and max stay those of the whole key. */
static __u64 agg_key(const struct bs_hdr *rec)
{
	return ((const struct bs_syscall_agg *)rec)->nr;
}

static int agg_closes(const struct bs_hdr *rec)
{
	return ((const struct bs_syscall_agg *)rec)->flags & BS_AGG_FINAL;
}

static void agg_since(struct bs_hdr *rec, const struct bs_hdr *base)
{
	struct bs_syscall_agg *a = (void *)rec;
	const struct bs_syscall_agg *b = (const void *)base;

	a->count -= b->count < a->count ? b->count : a->count;
	a->total_ns -= b->total_ns < a->total_ns ? b->total_ns : a->total_ns;
}

const struct family_cumulative osrt_cumulative[] = {
	{ BS_REC_SYSCALL_AGG, sizeof(struct bs_syscall_agg), agg_key, agg_closes, agg_since },
	{ 0 },
};
