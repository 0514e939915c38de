// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family's sync points (family.h struct family_sync): its collectives, which end at
 * the same instant on every rank of their communicator, so `bpfsight merge` can put the ranks'
 * files on one clock.
 *
 * What a collective's end is depends on what was recorded:
 *   - with the gpu family (-t nccl,gpu, the cupti-shim): the end of its NCCL kernel
 *     (ncclDevKernel_*, ncclKernel_* in older NCCL) on the GPU, which is where NCCL's ranks
 *     meet: the kernel the call launched, found by its launching thread and the launching
 *     call's entry (the gpu family's link), inside the NCCL call (or inside the ncclGroupEnd
 *     that launched a group's work). A collective whose kernel never shows (lost, or a CUDA
 *     graph replays it) is no sync point;
 *   - without it: the host call's return (a group's ncclGroupEnd's), which is the end for a
 *     call that blocks until the collective completes (CPU backends, the tests' library), and
 *     not for NCCL's asynchronous calls on GPUs: merge's residuals then say so;
 *   - a gloo collective: its work's finish on the process group's worker thread
 *     (NCCL_F_GLOO_DONE), a point of its own after the collective's entry (SYNC_NO_END: the
 *     rank, the size, the tag). Its sequence number is its tag, the same on every rank
 *     whenever the recording began: no point of gloo's is SYNC_INFERRED.
 * Kernel records come after their calls' (the shim sends them in batches): the calls wait per
 * thread, at most QUEUE_MAX, until a kernel of theirs or of a later call arrives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "nccl_coll.h"
#include "gpu_records.h"
#include "trace_meta.h"
#include "hmap.h"

#define QUEUE_MAX 256 /* collectives of a thread waiting for their kernels */

/* A collective waiting for its kernel(s). */
struct held {
	struct nccl_coll c;
	__u64 gpu_end; /* the latest end of a kernel it launched, 0 = none yet */
};

struct queue {
	struct held v[QUEUE_MAX];
	__u32 head, n;
};

struct nccl_sync {
	struct nccl_colls *colls;
	int gpu;	      /* the file recorded the gpu family: ends are kernels' */
	struct hmap *threads; /* {pid, tid} -> struct queue * */
	sync_emit_fn emit;
	void *arg;
};

static void *sync_new(const struct trace_meta *meta)
{
	struct nccl_sync *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->gpu = family__recorded_type(meta, BS_REC_GPU_KERNEL);
	s->colls = nccl_colls__new();
	s->threads = hmap__new(sizeof(struct queue *));
	if (!s->colls || !s->threads) {
		nccl_colls__free(s->colls);
		hmap__free(s->threads);
		free(s);
		return NULL;
	}
	return s;
}

static void sync_free(void *st)
{
	struct nccl_sync *s = st;
	struct queue **q;
	size_t it = 0;

	if (!s)
		return;
	while ((q = hmap__next(s->threads, &it, NULL)))
		free(*q);
	hmap__free(s->threads);
	nccl_colls__free(s->colls);
	free(s);
}

static void emit_point(struct nccl_sync *s, const struct nccl_coll *c, __u64 end, __u32 flags)
{
	struct sync_point p = { .group = c->group,
				.seq = c->seq,
				.enter_ts = c->enter_ts,
				.end_ts = end,
				.pid = c->pid,
				.rank = c->rank,
				.nranks = c->nranks,
				.flags = (c->inferred && !c->async ? SYNC_INFERRED : 0) | flags };

	s->emit(s->arg, &p);
}

/* The oldest held collective leaves: a sync point when its kernel came. */
static void pop(struct nccl_sync *s, struct queue *q)
{
	struct held *h = &q->v[q->head];

	if (h->gpu_end)
		emit_point(s, &h->c, h->gpu_end, 0);
	q->head = (q->head + 1) % QUEUE_MAX;
	q->n--;
}

static void on_coll(void *arg, const struct nccl_coll *c)
{
	struct nccl_sync *s = arg;
	struct queue **q;

	if (c->async) {
		/* a gloo collective, seen at its entry only: its rank and size, no shared instant */
		emit_point(s, c, c->enter_ts, SYNC_NO_END);
		return;
	}
	if (!s->gpu) {
		emit_point(s, c, c->end_ts, 0);
		return;
	}
	q = hmap__get(s->threads, (struct hkey){ c->pid, c->tid }, 1);
	if (!q || (!*q && !(*q = calloc(1, sizeof(**q)))))
		return; /* out of memory: this one is no sync point */
	if ((*q)->n == QUEUE_MAX)
		pop(s, *q);
	(*q)->v[((*q)->head + (*q)->n) % QUEUE_MAX] = (struct held){ *c, 0 };
	(*q)->n++;
}

static int nccl_kernel(const struct trace_model *m, const struct bs_gpu_kernel *k)
{
	const char *name = trace_model__string(m, k->name_id);

	return name && (!strncmp(name, "ncclDevKernel", 13) || !strncmp(name, "ncclKernel", 10));
}

/*
 * A kernel K of NCCL's: it ends the held collectives that launched it (their launch window
 * holds its launching call's entry); those before them on the thread never get one.
 */
static void on_kernel(struct nccl_sync *s, const struct trace_model *m,
		      const struct bs_gpu_kernel *k)
{
	struct queue **q;
	__u32 first = QUEUE_MAX;

	if (!k->h.tid || !k->call_ts || !nccl_kernel(m, k))
		return;
	q = hmap__get(s->threads, (struct hkey){ k->h.pid, k->h.tid }, 0);
	if (!q || !*q)
		return;
	for (__u32 i = 0; i < (*q)->n; i++) {
		struct held *h = &(*q)->v[((*q)->head + i) % QUEUE_MAX];

		if (k->call_ts < h->c.launch_ts || k->call_ts > h->c.end_ts)
			continue;
		if (first == QUEUE_MAX)
			first = i;
		if (k->h.ts + k->dur > h->gpu_end)
			h->gpu_end = k->h.ts + k->dur;
	}
	for (__u32 i = 0; i < first && first != QUEUE_MAX; i++)
		pop(s, *q);
}

static int sync_observe(void *st, const struct bs_hdr *rec, const struct trace_model *m,
			sync_emit_fn emit, void *arg)
{
	const struct nccl_walk *w = trace_model__walk(m, &family_nccl);
	const struct nccl_ctx *ctx;
	struct nccl_sync *s = st;

	s->emit = emit;
	s->arg = arg;
	if (s->gpu && rec->type == BS_REC_GPU_KERNEL && rec->size >= sizeof(struct bs_gpu_kernel)) {
		on_kernel(s, m, (const void *)rec);
		return 0;
	}
	if (!w || rec->type != BS_REC_NCCL_CALL)
		return 0;
	ctx = nccl_walk__ctx(w, rec);
	if (ctx && ctx->gloo_end) {
		struct nccl_coll c = { .group = ctx->comm.group,
				       .seq = (__u64)ctx->coll_seq,
				       .enter_ts = ctx->enter_ts,
				       .pid = rec->pid,
				       .rank = ctx->comm.rank,
				       .nranks = ctx->comm.nranks,
				       .async = 1 };

		emit_point(s, &c, rec->ts, SYNC_AGAIN);
		return 0;
	}
	return nccl_colls__observe(s->colls, w, rec, on_coll, s);
}

static void sync_finish(void *st, sync_emit_fn emit, void *arg)
{
	struct nccl_sync *s = st;
	struct queue **q;
	size_t it = 0;

	s->emit = emit;
	s->arg = arg;
	while ((q = hmap__next(s->threads, &it, NULL)))
		while (*q && (*q)->n)
			pop(s, *q);
}

const struct family_sync nccl_sync = {
	.new = sync_new,
	.observe = sync_observe,
	.finish = sync_finish,
	.free = sync_free,
};
