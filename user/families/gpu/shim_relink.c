// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The launch join over a file's records (see shim_relink.h). */
#include <stdlib.h>
#include <string.h>
#include "cuda_records.h"
#include "gpu.h"
#include "shim_relink.h"
#include "trace_meta.h"

#define TICK_NS	 100000000ull /* how often (in file time) waiting records are retried */
#define MAX_COPY 512 /* GPU and API records are far smaller; larger ones pass as they are */

struct shim_relink {
	struct shim_join *join;
	__u8 *q; /* released records, back to back, from qhead to qlen */
	size_t qhead, qlen, qcap;
	__u64 now, last_tick;
	__u64 scratch[MAX_COPY / 8];
};

static void queue(void *arg, struct bs_hdr *rec)
{
	struct shim_relink *rl = arg;

	if (rl->qlen + rec->size > rl->qcap) {
		size_t cap = rl->qcap ? 2 * rl->qcap : 64 * 1024;
		__u8 *q;

		while (cap < rl->qlen + rec->size)
			cap *= 2;
		q = realloc(rl->q, cap);
		if (!q)
			return; /* out of memory: the record is not shown (no way to say more here) */
		rl->q = q;
		rl->qcap = cap;
	}
	memcpy(rl->q + rl->qlen, rec, rec->size);
	rl->qlen += rec->size;
}

struct shim_relink *shim_relink__new(int calls)
{
	struct shim_relink *rl = calloc(1, sizeof(*rl));

	if (!rl)
		return NULL;
	rl->join = shim_join__new(queue, rl);
	if (!rl->join) {
		free(rl);
		return NULL;
	}
	if (!calls)
		shim_join__no_calls(rl->join);
	shim_join__order_always(rl->join);
	return rl;
}

void shim_relink__free(struct shim_relink *rl)
{
	if (!rl)
		return;
	shim_join__free(rl->join);
	free(rl->q);
	free(rl);
}

/* The queue's records were all handed out: reuse it from the start. */
static void compact(struct shim_relink *rl)
{
	if (rl->qhead == rl->qlen) {
		rl->qhead = rl->qlen = 0;
	} else if (rl->qhead > rl->qcap / 2) {
		memmove(rl->q, rl->q + rl->qhead, rl->qlen - rl->qhead);
		rl->qlen -= rl->qhead;
		rl->qhead = 0;
	}
}

int shim_relink__feed(struct shim_relink *rl, const struct bs_hdr *rec)
{
	struct bs_hdr *copy = (struct bs_hdr *)rl->scratch;

	compact(rl);
	if (rec->ts > rl->now)
		rl->now = rec->ts;
	if (rl->now >= rl->last_tick + TICK_NS) {
		shim_join__expire(rl->join, rl->now, 0);
		rl->last_tick = rl->now;
	}
	switch (rec->type) {
	case BS_REC_CUDA_CALL:
		shim_join__cuda_call(rl->join, rec);
		return 1;
	case BS_REC_GPU_API:
		if (rec->size > MAX_COPY || rec->size < sizeof(struct bs_gpu_api))
			return 1;
		memcpy(copy, rec, rec->size);
		shim_join__api(rl->join, (struct bs_gpu_api *)copy, rl->now);
		return 0;
	case BS_REC_GPU_KERNEL:
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
		if (rec->size > MAX_COPY)
			return 1;
		memcpy(copy, rec, rec->size);
		shim_join__gpu(rl->join, copy, rl->now);
		return 0;
	}
	return 1;
}

void shim_relink__end(struct shim_relink *rl)
{
	compact(rl);
	shim_join__expire(rl->join, rl->now, 1);
}

const struct bs_hdr *shim_relink__next(struct shim_relink *rl)
{
	const struct bs_hdr *rec;

	if (rl->qhead >= rl->qlen)
		return NULL;
	rec = (const void *)(rl->q + rl->qhead);
	rl->qhead += rec->size;
	return rec;
}

void shim_relink__stats(const struct shim_relink *rl, struct shim_join_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (rl)
		shim_join__stats(rl->join, s);
}

static void *reorder_new(const struct trace_meta *meta)
{
	return shim_relink__new(trace_meta__has_family(meta, "cuda"));
}

static int reorder_feed(void *st, const struct bs_hdr *rec)
{
	return shim_relink__feed(st, rec);
}

static void reorder_end(void *st)
{
	shim_relink__end(st);
}

static const struct bs_hdr *reorder_next(void *st)
{
	return shim_relink__next(st);
}

static void reorder_free(void *st)
{
	shim_relink__free(st);
}

const struct family_reorder gpu_reorder = {
	.new = reorder_new,
	.feed = reorder_feed,
	.end = reorder_end,
	.next = reorder_next,
	.free = reorder_free,
	.without = "GPU links are shown as recorded",
	.info_text = gpu_links__text,
	.info_json = gpu_links__json,
};
