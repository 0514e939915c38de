// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl's record side with --flight-recorder: what a dump's window needs of the communicators
 * made before it (nccl_window.h). The reading side's walk (nccl_decode.c) runs on the calls as
 * they are recorded; per communicator, the end of each collective of the last window (and a
 * little more) is kept, so that at a dump the count of those that ended before the window's
 * start is known exactly: those the dump lacks (a dump keeps an interval that ends in its
 * window, also one begun before it), the number the window's first one has on every rank.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family_record.h"
#include "nccl_window.h"

#define MARGIN_NS (5 * 1000000000ull) /* kept beyond the window: a dump cut a moment later */

/* A communicator's collectives of the window, by their ends (one thread's calls: in order). */
struct comm_calls {
	__u64 *ts;
	size_t head, n, cap;
	__u64 created; /* its creation's record time, 0: before the recording */
};

struct nccl_window {
	struct nccl_walk *w;
	struct hmap *comms; /* {pid, comm} -> struct comm_calls */
	__u64 keep_ns;
};

struct nccl_window *nccl_window__new(__u64 window_ns)
{
	struct nccl_window *nw = calloc(1, sizeof(*nw));

	if (!nw || !(nw->w = nccl_walk__new()) ||
	    !(nw->comms = hmap__new(sizeof(struct comm_calls)))) {
		nccl_window__free(nw);
		return NULL;
	}
	nw->keep_ns = window_ns + MARGIN_NS;
	return nw;
}

static void free_calls(struct hmap *comms, __u64 pid, int all)
{
	struct comm_calls *c;
	struct hkey key;
	size_t it = 0;

	while ((c = hmap__next(comms, &it, &key)))
		if (all || key.a == pid)
			free(c->ts);
	if (!all)
		hmap__del_all(comms, 0, pid);
}

void nccl_window__free(struct nccl_window *nw)
{
	if (!nw)
		return;
	if (nw->comms)
		free_calls(nw->comms, 0, 1);
	hmap__free(nw->comms);
	nccl_walk__free(nw->w);
	free(nw);
}

/* A collective of C ended at TS; those older than the window (and its margin) go. */
static void push(struct nccl_window *nw, struct comm_calls *c, __u64 ts)
{
	while (c->n && c->ts[c->head] + nw->keep_ns < ts) {
		c->head++;
		c->n--;
	}
	if (c->head && c->head + c->n == c->cap) { /* room at the back: slide down */
		memmove(c->ts, c->ts + c->head, c->n * sizeof(*c->ts));
		c->head = 0;
	}
	if (array__grow((void **)&c->ts, c->head + c->n, &c->cap, sizeof(*c->ts)))
		return; /* out of memory: a dump's numbers may then be off, as -p's are */
	c->ts[c->head + c->n++] = ts;
}

void nccl_window__observe(struct nccl_window *nw, const struct bs_hdr *rec)
{
	const struct nccl_ctx *ctx;
	struct comm_calls *c;
	__u64 dur;

	if (rec->type == BS_REC_EXIT) {
		if (rec->size >= sizeof(struct bs_exit) &&
		    ((const struct bs_exit *)rec)->group_dead) {
			free_calls(nw->comms, rec->pid, 0);
			nccl_walk__forget(nw->w, rec->pid);
		}
		return;
	}
	nccl_walk__observe(nw->w, rec);
	ctx = nccl_walk__ctx(nw->w, rec);
	if (!ctx)
		return;
	/* A communicator made now: its creation is a record the window may hold. */
	if (nw->w->call.ok && (nw->w->call.out_key == K_COMM || nw->w->call.out_key == K_NEWCOMM)) {
		__u64 comm = nw->w->call.v[nw->w->call.out_key];

		c = comm ? hmap__get(nw->comms, (struct hkey){ rec->pid, comm }, 1) : NULL;
		if (c) {
			free(c->ts);
			memset(c, 0, sizeof(*c));
			c->created = rec->ts;
		}
	}
	if (ctx->coll_seq < 0 || ctx->open || !ctx->have_comm)
		return;
	c = hmap__get(nw->comms, (struct hkey){ rec->pid, ctx->comm.comm }, 1);
	if (c && rec->size >= sizeof(*rec) + sizeof(dur)) {
		memcpy(&dur, (const __u8 *)rec + sizeof(*rec), sizeof(dur)); /* a span's */
		push(nw, c, rec->ts + dur);
	}
}

struct known {
	__u32 serial;
	struct hkey key;
	const struct comm_calls *c;
};

static int serial_cmp(const void *a, const void *b)
{
	const struct known *x = a, *y = b;

	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* The communicators made before FROM, in the order the walk first saw them (as a reader will). */
static struct known *made_before(struct nccl_window *nw, __u64 from, size_t *n)
{
	struct known *v = NULL;
	const struct nccl_comm *nc;
	struct comm_calls *c;
	size_t it = 0, cap = 0;
	struct hkey key;

	*n = 0;
	while ((c = hmap__next(nw->comms, &it, &key))) {
		nc = nccl_walk__comm(nw->w, (__u32)key.a, key.b);
		if (!nc || (c->created && c->created >= from))
			continue; /* made in the window: its creation is there */
		if (array__grow((void **)&v, *n, &cap, sizeof(*v)))
			break;
		v[(*n)++] = (struct known){ nc->serial, key, c };
	}
	if (v)
		qsort(v, *n, sizeof(*v), serial_cmp);
	return v;
}

int nccl_window__prologue(struct nccl_window *nw, __u64 from, family_dump_write_fn fn, void *arg)
{
	const struct nccl_comm *nc;
	const struct comm_calls *c;
	struct bs_nccl_comm r;
	struct hkey key;
	size_t n, in;
	struct known *v = made_before(nw, from, &n);
	int err = 0;

	for (size_t k = 0; k < n && !err; k++) {
		key = v[k].key;
		c = v[k].c;
		nc = nccl_walk__comm(nw->w, (__u32)key.a, key.b);
		for (in = 0; in < c->n && c->ts[c->head + c->n - 1 - in] >= from; in++)
			;
		memset(&r, 0, sizeof(r));
		r.h = (struct bs_hdr){ .type = BS_REC_NCCL_COMM,
				       .size = sizeof(r),
				       .pid = (__u32)key.a,
				       .tid = (__u32)key.a,
				       .ts = from };
		r.comm = key.b;
		r.id_hash = nc->id_hash;
		r.parent = nc->parent;
		r.base = nc->ncoll > in ? nc->ncoll - in : 0;
		r.rank = nc->rank;
		r.nranks = nc->nranks;
		r.flags = nc->have_hash ? BS_NCCL_COMM_HASH : 0;
		err = fn(arg, &r.h);
	}
	free(v);
	return err;
}
