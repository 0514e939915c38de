// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family in the Chrome export: its calls are "X" events of their kinds' styles, and
 * Kineto's distributedInfo ({"backend": "nccl", "rank": R, "world_size": W}) is written in the
 * header at the end (struct chrome_family.header): only when exactly one process of the trace
 * has a known rank, and one rank in its largest communicator.
 * Memory: a rank per process that made NCCL calls.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "export_chrome.h"
#include "nccl.h"
#include "hmap.h"

#define CHROME_DIST_RESERVE 128 /* bytes kept for distributedInfo (it needs at most 87) */

/* The rank a process showed in its largest NCCL communicator (its world, in torch terms). */
struct chrome_rank {
	__s32 rank;
	__s32 nranks; /* -1 = unknown (only ncclCommUserRank was seen) */
	__u32 have;
	__u32 ambiguous; /* two communicators of that size gave different ranks */
};

static int nccl_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = hmap__new(sizeof(struct chrome_rank)); /* {pid, 0} -> struct chrome_rank */
	return *st ? 0 : -ENOMEM;
}

static void nccl_free(void *st)
{
	hmap__free(st);
}

/*
 * A communicator an NCCL call used, as the nccl walk knows it now (the init that made it, or
 * ncclCommUserRank/ncclCommCount): the rank of the call's process, kept from its largest
 * communicator. A failed init's rank argument is only a request and never counts. Then the
 * call is drawn by its style.
 */
static int nccl_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		     const struct trace_model *m)
{
	const struct nccl_walk *w = trace_model__walk(m, &family_nccl);
	const struct nccl_comm *cm = NULL;
	struct chrome_rank *r;

	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++)
		if (ev->args[i].kind == EVENT_ARG_HEX && !strcmp(ev->args[i].key, "comm"))
			cm = nccl_walk__comm(w, ev->pid, ev->args[i].u);
	if (!cm || cm->rank < 0)
		return 0;
	r = hmap__get(st, (struct hkey){ ev->pid, 0 }, 1);
	if (!r)
		return -ENOMEM;
	if (!r->have || cm->nranks > r->nranks) {
		*r = (struct chrome_rank){ cm->rank, cm->nranks, 1, 0 };
	} else if (cm->nranks == r->nranks && cm->rank != r->rank) {
		r->ambiguous = 1;
	}
	return 0;
}

/* Kineto's spacing ("rank": R), which tools matching the text expect. */
static int nccl_header(void *st, char *buf, size_t space)
{
	const struct chrome_rank *r, *one = NULL;
	size_t it = 0, n = 0;

	while ((r = hmap__next(st, &it, NULL))) {
		one = r;
		n++;
	}
	if (n != 1 || one->ambiguous)
		return 0;
	if (one->nranks >= 0)
		return snprintf(buf, space + 1,
				",\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, "
				"\"world_size\": %d}",
				one->rank, one->nranks);
	return snprintf(buf, space + 1,
			",\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d}", one->rank);
}

const struct chrome_family nccl_chrome = {
	.open = nccl_open,
	.free = nccl_free,
	.draw = nccl_draw,
	.header_space = CHROME_DIST_RESERVE,
	.header = nccl_header,
};
