// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Who came last to each collective (nccl_straggle.h). */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "nccl_straggle.h"
#include "hmap.h"

struct nccl_straggle {
	struct nccl_colls *colls;
	struct hmap *open;  /* {group, seq} -> struct nccl_inst, until every rank came */
	struct hmap *ranks; /* {pid, 0} -> struct nccl_rank_tot */
	struct nccl_inst **done;
	size_t ndone, cap;
	struct nccl_rank_tot **rank_v;
	int err;
};

struct nccl_straggle *nccl_straggle__new(void)
{
	struct nccl_straggle *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->colls = nccl_colls__new();
	s->open = hmap__new(sizeof(struct nccl_inst));
	s->ranks = hmap__new(sizeof(struct nccl_rank_tot));
	if (!s->colls || !s->open || !s->ranks) {
		nccl_straggle__free(s);
		return NULL;
	}
	return s;
}

void nccl_straggle__free(struct nccl_straggle *s)
{
	struct nccl_rank_tot *r;
	size_t it = 0;

	if (!s)
		return;
	for (size_t i = 0; i < s->ndone; i++)
		free(s->done[i]);
	free(s->done);
	free(s->rank_v);
	while (s->ranks && (r = hmap__next(s->ranks, &it, NULL)))
		busy_union__free(&r->busy);
	hmap__free(s->ranks);
	hmap__free(s->open);
	nccl_colls__free(s->colls);
	free(s);
}

/* A collective every rank came to (or the end): kept as a row, charged to its last rank. */
static void close_inst(struct nccl_straggle *s, const struct nccl_inst *in)
{
	struct nccl_rank_tot *r;
	struct nccl_inst *copy;
	__u64 wait = nccl_inst__wait(in);

	if (array__grow((void **)&s->done, s->ndone, &s->cap, sizeof(*s->done))) {
		s->err = -ENOMEM;
		return;
	}
	copy = malloc(sizeof(*copy));
	if (!copy) {
		s->err = -ENOMEM;
		return;
	}
	*copy = *in;
	copy->done = 1;
	s->done[s->ndone++] = copy;
	if (in->ranks < 2)
		return; /* alone: nobody waited for anybody */
	r = hmap__get(s->ranks, (struct hkey){ in->last_pid, 0 }, 0);
	if (!r)
		return;
	r->late++;
	r->made_wait_ns += wait;
	if (in->fn < NCCL_FN_SLOTS)
		r->fn_wait[in->fn] += wait;
	if (wait > r->worst_wait_ns) {
		r->worst_wait_ns = wait;
		r->worst_seq = in->seq;
		r->worst_group = in->group;
		r->worst_fn = in->fn;
	}
}

static void rank_call(struct nccl_straggle *s, const struct nccl_coll *c)
{
	struct nccl_rank_tot *r = hmap__get(s->ranks, (struct hkey){ c->pid, 0 }, 1);

	if (!r) {
		s->err = -ENOMEM;
		return;
	}
	if (!r->calls) {
		r->pid = c->pid;
		r->rank = r->nranks = -1;
		r->first_enter = c->enter_ts;
	}
	r->calls++;
	if (c->nranks > r->nranks) { /* its rank in its largest communicator */
		r->rank = c->rank;
		r->nranks = c->nranks;
	}
	if (c->enter_ts < r->first_enter)
		r->first_enter = c->enter_ts;
	if (c->end_ts > r->last_end)
		r->last_end = c->end_ts;
	r->async_calls += !!c->async;
	if (!c->async && c->end_ts > c->enter_ts &&
	    busy_union__add(&r->busy, c->enter_ts, c->end_ts))
		s->err = -ENOMEM;
}

/* One rank's call of a collective: the collective's summary grows by it. */
static void on_coll(void *arg, const struct nccl_coll *c)
{
	struct nccl_straggle *s = arg;
	struct hkey key = { c->group, c->seq };
	struct nccl_inst *in;

	rank_call(s, c);
	in = hmap__get(s->open, key, 1);
	if (!in) {
		s->err = -ENOMEM;
		return;
	}
	if (!in->ranks) {
		*in = (struct nccl_inst){ .group = c->group,
					  .seq = c->seq,
					  .first_enter = c->enter_ts,
					  .last_enter = c->enter_ts,
					  .min_end = c->end_ts,
					  .max_end = c->end_ts,
					  .fn = c->fn,
					  .nranks = c->nranks,
					  .last_rank = c->rank,
					  .last_pid = c->pid,
					  .async = c->async };
	} else if (c->enter_ts < in->first_enter) {
		/* Entries are kept less the earliest: a new earliest shifts the sum. */
		in->sum_enter += (__u64)in->ranks * (in->first_enter - c->enter_ts);
		in->first_enter = c->enter_ts;
	} else {
		in->sum_enter += c->enter_ts - in->first_enter;
	}
	if (in->ranks && c->enter_ts >= in->last_enter) {
		in->last_enter = c->enter_ts;
		in->last_rank = c->rank;
		in->last_pid = c->pid;
	}
	if (c->end_ts < in->min_end)
		in->min_end = c->end_ts;
	if (c->end_ts > in->max_end)
		in->max_end = c->end_ts;
	if (c->nranks > in->nranks)
		in->nranks = c->nranks;
	in->ranks++;
	if (in->nranks > 0 && in->ranks >= (__u32)in->nranks) {
		struct nccl_inst done = *in;

		hmap__del(s->open, key);
		close_inst(s, &done);
	}
}

void nccl_straggle__add(struct nccl_straggle *s, const struct bs_hdr *rec,
			const struct trace_model *m)
{
	const struct nccl_walk *w;

	if (rec->type != BS_REC_NCCL_CALL)
		return;
	w = trace_model__walk(m, &family_nccl);
	if (w && nccl_colls__observe(s->colls, w, rec, on_coll, s))
		s->err = -ENOMEM;
}

static int inst_cmp(const void *a, const void *b)
{
	const struct nccl_inst *x = *(const struct nccl_inst *const *)a;
	const struct nccl_inst *y = *(const struct nccl_inst *const *)b;
	__u64 wx = nccl_inst__wait(x), wy = nccl_inst__wait(y);

	/* The longest waits first; then in the job's order. */
	if (wx != wy)
		return wx < wy ? 1 : -1;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct nccl_rank_tot *x = *(const struct nccl_rank_tot *const *)a;
	const struct nccl_rank_tot *y = *(const struct nccl_rank_tot *const *)b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int nccl_straggle__finish(struct nccl_straggle *s, struct nccl_inst ***insts, size_t *ninsts,
			  struct nccl_rank_tot ***ranks, size_t *nranks)
{
	struct nccl_rank_tot *r;
	struct nccl_inst *in;
	size_t it = 0, n = 0;

	while ((in = hmap__next(s->open, &it, NULL)))
		close_inst(s, in);
	hmap__free(s->open);
	s->open = hmap__new(sizeof(struct nccl_inst));
	if (s->err)
		return s->err;
	free(s->rank_v);
	s->rank_v = calloc(hmap__count(s->ranks) + 1, sizeof(*s->rank_v));
	if (!s->rank_v || !s->open)
		return -ENOMEM;
	it = 0;
	while ((r = hmap__next(s->ranks, &it, NULL)))
		s->rank_v[n++] = r;
	if (s->ndone)
		qsort(s->done, s->ndone, sizeof(*s->done), inst_cmp);
	qsort(s->rank_v, n, sizeof(*s->rank_v), rank_cmp);
	*insts = s->done;
	*ninsts = s->ndone;
	*ranks = s->rank_v;
	*nranks = n;
	return 0;
}
