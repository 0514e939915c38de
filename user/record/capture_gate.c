// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --capture-range: ranges by time, events kept by their start (see capture_gate.h). */
#include <stdlib.h>
#include "capture_gate.h"

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
};

struct capture_gate *capture_gate__new(void)
{
	struct capture_gate *g = calloc(1, sizeof(*g));

	if (g && !(g->closed = calloc(MAX_RANGES, sizeof(*g->closed)))) {
		free(g);
		return NULL;
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
	if (g->depth++ == 0)
		g->open_start = ts;
}

void capture_gate__close(struct capture_gate *g, __u64 ts)
{
	if (!g->depth || --g->depth)
		return; /* a stop without a start is ignored, as nsys does */
	if (g->nclosed == MAX_RANGES) {
		g->closed[MAX_RANGES - 1].end = ts; /* widen the last: keeps more, never less */
		return;
	}
	g->closed[g->nclosed++] = (struct range){ g->open_start, ts };
}

/* Metadata and loss records are kept whatever the ranges say. */
static int is_event(__u16 type)
{
	switch (type) {
	case BS_REC_STRING:
	case BS_REC_PROCESS:
	case BS_REC_THREAD:
	case BS_REC_LOSS:
	case BS_REC_FORK:
	case BS_REC_EXEC:
	case BS_REC_EXIT:
	case BS_REC_COMM:
	case BS_REC_SYMBOL:
	case BS_REC_MAP_EXEC:
	case BS_REC_SYSCALL_AGG: /* cumulative counters, not events */
	case BS_REC_SHIM_STATUS: /* what the shim did: says why GPU records may be missing */
	case BS_REC_NVTX_NAME:
	case BS_REC_NVTX_BEGIN:
		return 0;
	default:
		return type >= 0x10;
	}
}

int capture_gate__keep(struct capture_gate *g, const struct bs_hdr *rec)
{
	if (!is_event(rec->type))
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
