// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Collective calls with their communicator, sequence number and end (nccl_coll.h). */
#include <errno.h>
#include <stdlib.h>
#include "nccl_coll.h"
#include "hmap.h"

#define GROUP_MAX 64 /* calls queued in one thread's group; more are not followed */

/* A thread's calls inside its open group, waiting for the outermost ncclGroupEnd. */
struct pending {
	__u32 n;
	__u32 _pad;
	struct nccl_coll v[GROUP_MAX];
};

struct nccl_colls {
	struct hmap *threads; /* {pid, tid} -> struct pending */
	__u64 pending;
};

struct nccl_colls *nccl_colls__new(void)
{
	struct nccl_colls *t = calloc(1, sizeof(*t));

	if (t && !(t->threads = hmap__new(sizeof(struct pending)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void nccl_colls__free(struct nccl_colls *t)
{
	if (!t)
		return;
	hmap__free(t->threads);
	free(t);
}

__u64 nccl_colls__pending(const struct nccl_colls *t)
{
	return t ? t->pending : 0;
}

/* The calls of the group that END (an outermost ncclGroupEnd) closed, ended with it. */
static void close_group(struct nccl_colls *t, const struct bs_ucall *end, nccl_coll_fn fn,
			void *arg)
{
	struct hkey key = { end->h.pid, end->h.tid };
	struct pending *p = hmap__get(t->threads, key, 0);

	if (!p)
		return;
	for (__u32 i = 0; i < p->n; i++) {
		p->v[i].end_ts = end->h.ts + end->dur;
		p->v[i].launch_ts = end->h.ts;
		fn(arg, &p->v[i]);
	}
	t->pending -= p->n;
	hmap__del(t->threads, key);
}

int nccl_colls__observe(struct nccl_colls *t, const struct nccl_walk *w, const struct bs_hdr *rec,
			nccl_coll_fn fn, void *arg)
{
	const struct nccl_ctx *ctx;
	const struct bs_ucall *r;
	struct nccl_coll c;
	struct pending *p;

	/* A call still in flight (a hang trigger's) has no end: no collective ends with it. */
	if (rec->type != BS_REC_NCCL_CALL || !(ctx = nccl_walk__ctx(w, rec)) || ctx->open)
		return 0;
	r = (const void *)rec;
	if (w->call.api && (w->call.api->flags & NCCL_F_GROUP_END) && !ctx->group_depth) {
		close_group(t, r, fn, arg);
		return 0;
	}
	/* a gloo collective's end is its entry's collective's (nccl_sync.c takes it) */
	if (ctx->coll_seq < 0 || !ctx->have_comm || ctx->gloo_end)
		return 0;
	c = (struct nccl_coll){ .group = ctx->comm.group,
				.seq = (__u64)ctx->coll_seq,
				.enter_ts = rec->ts,
				.end_ts = rec->ts + r->dur,
				.launch_ts = rec->ts,
				.pid = rec->pid,
				.tid = rec->tid,
				.rank = ctx->comm.rank,
				.nranks = ctx->comm.nranks,
				.fn = r->fn,
				.inferred = ctx->comm.inferred,
				.async = w->call.api && (w->call.api->flags & NCCL_F_GLOO) };
	if (!ctx->group_depth) {
		fn(arg, &c);
		return 0;
	}
	p = hmap__get(t->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!p)
		return -ENOMEM;
	if (p->n < GROUP_MAX) {
		p->v[p->n++] = c;
		t->pending++;
	}
	return 0;
}
