// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight top FILE: the frames a live top would have shown during a recording, as batch text
 * (as atop -r replays its logs). The records go through the same counters as a live
 * recording's, in file order; a frame is cut each time the records' clock (the latest time
 * seen: GPU records arrive late, with earlier times) passes an interval's end.
 */
#include <stdio.h>
#include <string.h>
#include "cpu_samples.h"
#include "top.h"
#include "top_screen.h"
#include "top_ui.h"
#include "trace_reader.h"
#include "trace_walk.h"
#include "msg.h"

struct replay {
	struct top *t;
	const struct top_ui_opts *o;
	struct top_view view;
	struct top_frame fr;
	__u32 frames;
	int width;
};

/* A frame cut at NOW, written. 1 once -n frames are out. */
static int frame(struct replay *rp, __u64 now)
{
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
	__u64 clock = 0, next = 0;
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
	while (!done && trace_reader__next(r, &h) == 1) {
		if (h->ts > clock)
			clock = h->ts;
		/* A gap of several intervals is one frame: a corrupt time cannot make a billion. */
		if (next && clock >= next) {
			next += (clock - next) / o->interval_ns * o->interval_ns;
			done = frame(&rp, next);
			next += o->interval_ns;
		}
		top__record(t, h);
		if (!next)
			next = top__live_since(t) + o->interval_ns;
	}
	if (!done && next && clock > next - o->interval_ns) /* the last, shorter interval */
		frame(&rp, clock);
	fflush(stdout);
	st = trace_reader__status(r);
	e = st->corrupt_chunks ? EXIT_READ_CORRUPT : EXIT_READ_OK;
	if (st->corrupt_chunks)
		pr_warn("%s: %u corrupt chunks skipped\n", path, st->corrupt_chunks);
	trace_reader__free(r);
	top_frame__free(&rp.fr);
	return e;
}
