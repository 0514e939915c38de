// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --capture-range: ranges by time, events kept by their start (see capture_gate.h). */
#include <stdlib.h>
#include "capture_gate.h"
#include "family.h"
#include "family_record.h"

#define MAX_RANGES 4096 /* closed ranges remembered; older ones are merged into the last */

struct range {
	__u64 start, end;
};

struct capture_gate {
	struct range *closed;
	__u32 nclosed;
	__u32 depth;	  /* open nesting */
	__u64 open_start; /* valid while depth > 0 */
	__u64 dropped;
	__u64 opened;		    /* ranges opened (the outermost opens) */
	__u8 kept[BS_REC_TYPE_MAX]; /* types kept whatever the ranges say: not events */
	capture_gate_closed_fn on_close;
	void *on_close_arg;
};

/* 1 when TYPE is in the 0-terminated LIST. */
static int listed(const __u16 *list, __u16 type)
{
	for (; list && *list; list++)
		if (*list == type)
			return 1;
	return 0;
}

struct capture_gate *capture_gate__new(void)
{
	struct capture_gate *g = calloc(1, sizeof(*g));

	if (g && !(g->closed = calloc(MAX_RANGES, sizeof(*g->closed)))) {
		free(g);
		return NULL;
	}
	/*
	 * The recording's own records (processes, strings, losses, symbols, stacks) and what the
	 * families say is state (struct family.state_records, .ungated) name the events kept;
	 * the unwind tables' use, written at the stop, and the pythons not read are the
	 * recording's own too.
	 */
	for (int t = 0; g && t < BS_REC_TYPE_MAX; t++) {
		g->kept[t] = t < 0x10 || t == BS_REC_UNWIND_USAGE || t == BS_REC_PY_UNREAD;
		for_each_family_while(it, !g->kept[t])
			g->kept[t] = listed(it.f->decode->state_records, t) ||
				     listed(it.f->record->ungated, t);
	}
	return g;
}

void capture_gate__free(struct capture_gate *g)
{
	if (!g)
		return;
	free(g->closed);
	free(g);
}

void capture_gate__open(struct capture_gate *g, __u64 ts)
{
	if (g->depth++ == 0) {
		g->open_start = ts;
		g->opened++;
	}
}

__u64 capture_gate__opened(const struct capture_gate *g)
{
	return g->opened;
}

void capture_gate__close(struct capture_gate *g, __u64 ts)
{
	if (!g->depth || --g->depth)
		return; /* a stop without a start is ignored, as nsys does */
	if (g->nclosed == MAX_RANGES)
		g->closed[MAX_RANGES - 1].end = ts; /* widen the last: keeps more, never less */
	else
		g->closed[g->nclosed++] = (struct range){ g->open_start, ts };
	if (g->on_close)
		g->on_close(g->on_close_arg, g->open_start, ts);
}

void capture_gate__on_close(struct capture_gate *g, capture_gate_closed_fn fn, void *arg)
{
	g->on_close = fn;
	g->on_close_arg = arg;
}

__u64 capture_gate__kept_ns(const struct capture_gate *g, __u64 now)
{
	__u64 ns = g->depth && now > g->open_start ? now - g->open_start : 0;

	for (__u32 i = 0; i < g->nclosed; i++)
		ns += g->closed[i].end - g->closed[i].start;
	return ns;
}

int capture_gate__judges(const struct capture_gate *g, __u16 type)
{
	return type >= BS_REC_TYPE_MAX || !g->kept[type];
}

int capture_gate__keep(struct capture_gate *g, const struct bs_hdr *rec)
{
	if (rec->type < BS_REC_TYPE_MAX && g->kept[rec->type])
		return 1;
	if (g->depth && rec->ts >= g->open_start)
		return 1;
	/* Newest first: records arrive roughly in time order. */
	for (__u32 i = g->nclosed; i-- > 0;) {
		if (rec->ts >= g->closed[i].start && rec->ts <= g->closed[i].end)
			return 1;
		if (g->closed[i].end < rec->ts)
			break;
	}
	g->dropped++;
	return 0;
}

__u64 capture_gate__dropped(const struct capture_gate *g)
{
	return g ? g->dropped : 0;
}
