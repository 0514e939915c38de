// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight top FILE: the frames a live top would have shown during a recording, as batch text
 * (as atop -r replays its logs). The records go through the same counters as a live
 * recording's, in file order; a frame is cut each time the records' clock (the latest time
 * seen: GPU records arrive late, with earlier times) passes an interval's end.
 *
 * Cumulative snapshots (gil's GIL_AGG, which the polled columns divide by the time between
 * polls) may come far behind their time: a flight-recorder dump writes them all after its
 * window (flight_cumul.c). Folded where they lie, every frame but the last would have none
 * and the last the whole window's. So a first pass keeps those that lie behind the interval
 * their place would fold them into, and the second folds each in its own interval, in time
 * order, before the frame that covers it is cut.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cpu_samples.h"
#include "family.h"
#include "top.h"
#include "top_screen.h"
#include "top_ui.h"
#include "trace_reader.h"
#include "trace_walk.h"
#include "msg.h"

/* A snapshot that lies behind its time: where it lies in the file, and a copy of it. */
struct late {
	__u64 at; /* its place: records before it */
	struct bs_hdr *rec;
};

struct replay {
	struct top *t;
	const struct top_ui_opts *o;
	struct top_view view;
	struct top_frame fr;
	__u32 frames;
	int width;
	struct late *late;	 /* in file order (the first pass's) */
	struct bs_hdr **by_time; /* the same, in time order */
	size_t nlate, cap, fed;
};

/* The records' clock and the next cut, as both passes step them. */
struct replay_clock {
	__u64 clock, next, interval;
};

/* REC's time seen: the time of the cut it brings first (0: none). */
static __u64 clock__step(struct replay_clock *c, __u64 ts)
{
	__u64 cut = 0;

	if (ts > c->clock)
		c->clock = ts;
	/* A gap of several intervals is one frame: a corrupt time cannot make a billion. */
	if (c->next && c->clock >= c->next) {
		c->next += (c->clock - c->next) / c->interval * c->interval;
		cut = c->next;
		c->next += c->interval;
	}
	return cut;
}

static int is_cumulative(__u16 type)
{
	for_each_family(it)
		for (const struct family_cumulative *c = it.f->decode->cumulative; c && c->type;
		     c++)
			if (c->type == type)
				return 1;
	return 0;
}

static int by_ts(const void *a, const void *b)
{
	const struct bs_hdr *x = *(struct bs_hdr *const *)a, *y = *(struct bs_hdr *const *)b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The first pass: the cumulative snapshots folded into a later interval than their own. */
static int find_late(struct replay *rp, const char *path, __u64 start)
{
	struct replay_clock c = { .interval = rp->o->interval_ns };
	const struct bs_hdr *h;
	struct trace_reader *r;
	char err[256];
	__u64 at = 0;
	int e;

	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!r)
		return 0; /* the second pass says why */
	for (; trace_reader__next(r, &h) == 1; at++) {
		clock__step(&c, h->ts);
		if (!c.next) {
			c.next = (start ? start : h->ts) + c.interval;
			continue;
		}
		if (h->ts >= c.next - c.interval || !is_cumulative(h->type))
			continue;
		if (array__grow((void **)&rp->late, rp->nlate, &rp->cap, sizeof(*rp->late)) ||
		    !(rp->late[rp->nlate].rec = malloc(h->size)))
			break; /* without memory: the rest are folded where they lie */
		memcpy(rp->late[rp->nlate].rec, h, h->size);
		rp->late[rp->nlate++].at = at;
	}
	trace_reader__free(r);
	rp->by_time = malloc((rp->nlate + 1) * sizeof(*rp->by_time));
	if (!rp->by_time) {
		for (size_t i = 0; i < rp->nlate; i++)
			free(rp->late[i].rec);
		rp->nlate = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < rp->nlate; i++)
		rp->by_time[i] = rp->late[i].rec;
	qsort(rp->by_time, rp->nlate, sizeof(*rp->by_time), by_ts);
	return 0;
}

/*
 * A dump's first snapshots count from the last poll before its window (flight_cumul.c): a
 * poll's period before the first poll, the period the time to the next poll (a poll writes
 * its snapshots within a millisecond). 0 with fewer than two polls: from the file's start.
 */
static __u64 first_poll_base(const struct replay *rp)
{
	__u64 first = rp->nlate ? rp->by_time[0]->ts : 0;

	for (size_t i = 1; i < rp->nlate; i++)
		if (rp->by_time[i]->ts > first + 1000000)
			return first > rp->by_time[i]->ts - first
				       ? first - (rp->by_time[i]->ts - first)
				       : 0;
	return 0;
}

/* The late snapshots of times before BEFORE (all: ~0), folded. */
static void feed_late(struct replay *rp, __u64 before)
{
	while (rp->fed < rp->nlate && rp->by_time[rp->fed]->ts < before)
		top__record(rp->t, rp->by_time[rp->fed++]);
}

static void free_late(struct replay *rp)
{
	for (size_t i = 0; i < rp->nlate; i++)
		free(rp->late[i].rec);
	free(rp->late);
	free(rp->by_time);
}

/* A frame cut at NOW, written. 1 once -n frames are out. */
static int frame(struct replay *rp, __u64 now)
{
	feed_late(rp, now);
	if (top__cut(rp->t, now, &rp->fr))
		return 1;
	rp->view.live_ns = now - top__live_since(rp->t);
	top_screen__render(stdout, &rp->fr, &rp->view, rp->width, 0);
	putchar('\n');
	return rp->o->iterations && ++rp->frames >= rp->o->iterations;
}

int top_replay__run(struct top *t, const char *path, const struct top_ui_opts *o, int width)
{
	struct replay rp = { .t = t, .o = o, .width = width };
	const struct trace_status *st;
	const struct bs_hdr *h;
	struct trace_reader *r;
	struct replay_clock c = { .interval = o->interval_ns };
	size_t skip = 0;
	__u64 at = 0, cut, start;
	const char *opt;
	char err[256];
	int e, done = 0;

	r = trace_reader__open(path, err, sizeof(err), &e);
	if (!r) {
		pr_err("%s: %s\n", path, err);
		return EXIT_READ_FAIL;
	}
	top__replay(t);
	rp.view = (struct top_view){ .sort = o->sort,
				     .threads = o->threads,
				     .target = o->target,
				     .interval_ns = o->interval_ns,
				     .functions = o->functions,
				     .fsort = o->fsort,
				     .funcs_hint = o->funcs_hint };
	top__want_functions(t, o->functions);
	/* Its samples stand for the period the recording sampled at (the header says). */
	top__set_sample_period(t, cpu_samples__period_ns(trace_reader__meta(r)->options));
	/* A flight-recorder dump's frames are its window's (its options say where it starts). */
	opt = trace_reader__meta(r)->options;
	opt = opt ? strstr(opt, "window_start_ns=") : NULL;
	start = opt ? strtoull(opt + 16, NULL, 10) : 0;
	if (find_late(&rp, path, start)) {
		trace_reader__free(r);
		pr_err("%s: out of memory\n", path);
		return EXIT_READ_FAIL;
	}
	if (start) /* a flight-recorder dump */
		top__replay_from(t, start, first_poll_base(&rp));
	for (; !done && trace_reader__next(r, &h) == 1; at++) {
		if ((cut = clock__step(&c, h->ts)))
			done = frame(&rp, cut);
		if (skip < rp.nlate && rp.late[skip].at == at) {
			skip++; /* folded in its own interval */
			continue;
		}
		top__record(t, h);
		if (!c.next)
			c.next = top__live_since(t) + o->interval_ns;
	}
	if (!done && c.next && c.clock > c.next - o->interval_ns) { /* the last, shorter interval */
		feed_late(&rp, ~0ull);
		frame(&rp, c.clock);
	}
	fflush(stdout);
	st = trace_reader__status(r);
	e = st->corrupt_chunks ? EXIT_READ_CORRUPT : EXIT_READ_OK;
	if (st->corrupt_chunks)
		pr_warn("%s: %u corrupt chunks skipped\n", path, st->corrupt_chunks);
	trace_reader__free(r);
	top_frame__free(&rp.fr);
	free_late(&rp);
	return e;
}
