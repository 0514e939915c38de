// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Who waits in which collective, who never came, and where it is instead (nccl_hang.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "nccl_hang.h"
#include "stack_call.h"
#include "stack_format.h"
#include "table.h"
#include "thread_name.h"
#include "thread_state.h"
#include "trace_snaps.h"

/* A call of another uprobe-API family in flight (a CUDA synchronization): its thread waits. */
struct open_call {
	__u64 ts;
	char name[48];
};

/* A call in flight, for the claims made of them in order. */
struct open_ref {
	__u32 pid, tid;
	const struct open_call *o;
};

struct nccl_hang {
	struct hang_rank *v;
	size_t n, cap;
	struct hmap *by_key; /* {pid, group} -> position + 1 in v */
	struct hmap *open;   /* {pid, tid} -> struct open_call: the outermost call in flight */
	int ready;	     /* the ranks completed from the snapshot, sorted */
	struct hang_coll *colls;
	size_t ncolls, ccap;
	int have_colls;
	struct open_ref *opens; /* the calls in flight, by entry (nccl_hang__next_open) */
	size_t nopens;
	int have_opens;
	int loaded; /* from a server's answer (nccl_hang__load) */
};

struct nccl_hang *nccl_hang__new(void)
{
	struct nccl_hang *h = calloc(1, sizeof(*h));

	if (h && (!(h->by_key = hmap__new(sizeof(size_t))) ||
		  !(h->open = hmap__new(sizeof(struct open_call))))) {
		nccl_hang__free(h);
		h = NULL;
	}
	return h;
}

void nccl_hang__free(struct nccl_hang *h)
{
	if (!h)
		return;
	free(h->v);
	hmap__free(h->by_key);
	hmap__free(h->open);
	free(h->colls);
	free(h->opens);
	free(h);
}

static struct hang_rank *rank_of(struct nccl_hang *h, __u32 pid, __u64 group)
{
	size_t *pos = hmap__get(h->by_key, (struct hkey){ pid, group }, 1);

	if (!pos)
		return NULL;
	if (!*pos) {
		if (array__grow((void **)&h->v, h->n, &h->cap, sizeof(*h->v)))
			return NULL;
		h->v[h->n] = (struct hang_rank){ .group = group,
						 .pid = pid,
						 .tid = pid,
						 .rank = -1,
						 .nranks = -1,
						 .entered = -1,
						 .left = -1 };
		*pos = ++h->n;
	}
	return &h->v[*pos - 1];
}

/* A call of a uprobe-API family (its table's record) still in flight: kept per thread. */
static void add_open(struct nccl_hang *h, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct open_call *o;
	struct event ev;
	int f;

	if (rec->size < sizeof(*u) || !(u->depth & BS_UCALL_OPEN) ||
	    !family__decoder_at(rec->type, &f) || !families[f]->api ||
	    families[f]->api->rec_type != rec->type)
		return;
	o = hmap__get(h->open, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!o || (o->ts && o->ts <= trace_model__began(m, rec)))
		return; /* the outermost (the earliest) says what the thread waits in */
	event__init(&ev, rec, "");
	o->ts = trace_model__began(m,
				   rec); /* entered before the window: how long it really waited */
	snprintf(o->name, sizeof(o->name), "%s",
		 family__decode(rec, m, &ev) == 1 && ev.name ? ev.name : "a call");
}

void nccl_hang__add(struct nccl_hang *h, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct nccl_walk *w;
	const struct nccl_ctx *ctx;
	struct hang_rank *r;
	__u64 bytes;
	int known;

	if (rec->type != BS_REC_NCCL_CALL) {
		add_open(h, rec, m);
		return;
	}
	w = trace_model__walk(m, &family_nccl);
	ctx = nccl_walk__ctx(w, rec);
	if (!ctx || ctx->coll_seq < 0 || !ctx->have_comm) {
		add_open(h, rec, m); /* an init, a group's end... in flight */
		return;
	}
	r = rank_of(h, rec->pid, ctx->comm.group);
	if (!r)
		return;
	r->tid = rec->tid;
	r->comm = ctx->comm.comm;
	r->have_hash = ctx->comm.have_hash;
	if (ctx->comm.rank >= 0)
		r->rank = ctx->comm.rank;
	if (ctx->comm.nranks >= 0)
		r->nranks = ctx->comm.nranks;
	if (ctx->coll_seq >= r->entered) {
		r->entered = ctx->coll_seq;
		r->entered_fn = w->call.r->fn;
		r->entered_ts = trace_model__began(m, rec);
		r->entered_open = ctx->open;
		bytes = nccl_call__bytes(&w->call, &known);
		r->bytes_known = known;
		r->entered_bytes = bytes;
	}
	if (!ctx->open && ctx->coll_seq >= r->left) {
		r->left = ctx->coll_seq;
		r->left_ts = rec->ts + w->call.r->dur;
	}
}

/* The nccl table's entry shown as NAME ("nccl_fn_N" of an entry a newer table has: N). */
static __u32 fn_of(const char *name)
{
	unsigned fn;

	for (__u32 i = 0; i < nccl_table.napis; i++)
		if (!strcmp(ucall_api__shown(&nccl_table.apis[i]), name))
			return i;
	return sscanf(name, "nccl_fn_%u", &fn) == 1 ? fn : nccl_table.napis;
}

int nccl_hang__load(struct nccl_hang *h, const struct table *t)
{
	enum {
		C_WHAT,
		C_PID,
		C_TID,
		C_COMM,
		C_RANK,
		C_NRANKS,
		C_ENT,
		C_FN,
		C_ENT_TS,
		C_OPEN,
		C_BYTES,
		C_LEFT,
		C_LEFT_TS,
		NCOLS
	};
	static const char *const keys[NCOLS] = { "what",       "pid",	       "tid",	  "comm",
						 "rank",       "nranks",       "entered", "name",
						 "entered_ts", "entered_open", "bytes",	  "left",
						 "left_ts" };
	int c[NCOLS];

	for (int k = 0; k < NCOLS; k++)
		c[k] = table__col(t, keys[k]);
	h->loaded = 1;
	for (int row = 0; row < table__nrows(t); row++) {
		const char *what = table__get_str(t, row, c[C_WHAT]), *name;
		__u32 pid = (__u32)table__get_u64(t, row, c[C_PID]);
		__u32 tid = (__u32)table__get_u64(t, row, c[C_TID]);
		unsigned long long group = 0;
		struct open_call *o;
		struct hang_rank *r;

		name = table__get_str(t, row, c[C_FN]);
		if (what && !strcmp(what, "o")) {
			o = hmap__get(h->open, (struct hkey){ pid, tid }, 1);
			if (!o)
				return -ENOMEM;
			o->ts = (__u64)table__get_s64(t, row, c[C_ENT_TS]);
			snprintf(o->name, sizeof(o->name), "%s", name ? name : "a call");
			continue;
		}
		if (!table__get_str(t, row, c[C_COMM]) ||
		    sscanf(table__get_str(t, row, c[C_COMM]), "%llx", &group) != 1)
			continue;
		r = rank_of(h, pid, group);
		if (!r)
			return -ENOMEM;
		r->tid = tid;
		r->have_hash = 1;
		r->rank = (__s32)table__get_s64(t, row, c[C_RANK]);
		r->nranks = (__s32)table__get_s64(t, row, c[C_NRANKS]);
		r->entered = table__get_s64(t, row, c[C_ENT]);
		r->entered_fn = fn_of(name ? name : "");
		r->entered_ts = (__u64)table__get_s64(t, row, c[C_ENT_TS]);
		r->entered_open = (int)table__get_u64(t, row, c[C_OPEN]);
		r->bytes_known = table__get_s64(t, row, c[C_BYTES]) >= 0;
		r->entered_bytes = r->bytes_known ? (__u64)table__get_s64(t, row, c[C_BYTES]) : 0;
		r->left = table__get_s64(t, row, c[C_LEFT]);
		r->left_ts = (__u64)table__get_s64(t, row, c[C_LEFT_TS]);
	}
	return 0;
}

int nccl_hang__loaded(const struct nccl_hang *h)
{
	return h && h->loaded;
}

int nccl_hang__has_snapshot(const struct nccl_hang *h, const struct trace_model *m)
{
	return trace_snaps__taken(trace_model__snaps(m)) != 0;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct hang_rank *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * Ranks the communicators do not say come from the environment (torchrun's RANK, WORLD_SIZE),
 * and a process the snapshot read without a collective gets a row of its own.
 */
static void complete(struct nccl_hang *h, const struct trace_model *m)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_proc_snap *p;
	size_t i = 0;

	if (h->ready)
		return;
	h->ready = 1;
	for (size_t k = 0; k < h->n; k++) {
		p = trace_snaps__proc(s, h->v[k].pid);
		if (p && h->v[k].rank < 0 && p->env_rank >= 0 && h->v[k].nranks == p->env_world)
			h->v[k].rank = p->env_rank;
		if (p && h->v[k].rank < 0 && h->v[k].nranks < 0 && p->env_rank >= 0) {
			h->v[k].rank = p->env_rank;
			h->v[k].nranks = p->env_world;
		}
	}
	while ((p = trace_snaps__next_proc(s, &i))) {
		int has = 0;

		for (size_t k = 0; k < h->n && !has; k++)
			has = h->v[k].pid == p->h.pid;
		if (!has && p->env_rank >= 0 && rank_of(h, p->h.pid, 0)) {
			h->v[h->n - 1].rank = p->env_rank;
			h->v[h->n - 1].nranks = p->env_world;
		}
	}
	if (h->n)
		qsort(h->v, h->n, sizeof(*h->v), rank_cmp);
	/* Positions moved: the index is rebuilt. */
	for (size_t k = 0; k < h->n; k++) {
		size_t *pos = hmap__get(h->by_key, (struct hkey){ h->v[k].pid, h->v[k].group }, 1);

		if (pos)
			*pos = k + 1;
	}
}

const struct hang_rank *nccl_hang__next(struct nccl_hang *h, const struct trace_model *m, size_t *i)
{
	complete(h, m);
	return *i < h->n ? &h->v[(*i)++] : NULL;
}

__u64 nccl_hang__taken(const struct trace_model *m, __u32 pid)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_proc_snap *p = trace_snaps__proc(s, pid);

	return p ? p->h.ts : trace_snaps__taken(s);
}

const char *nccl_hang__fn(__u32 fn, char *buf, size_t len)
{
	const struct ucall_api *api = ucall_table__api(&nccl_table, fn);

	if (api)
		return ucall_api__shown(api);
	snprintf(buf, len, "nccl_fn_%u", fn);
	return buf;
}

/* The thread of PID holding its GIL in the snapshot, 0 when none. */
static __u32 gil_holder(const struct trace_model *m, __u32 pid)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_thread_snap *t;
	size_t i = 0;

	while ((t = trace_snaps__next_thread(s, &i)))
		if (t->h.pid == pid && (t->flags & BS_SNAP_GIL))
			return t->h.tid;
	return 0;
}

const char *nccl_hang__where(const struct trace_model *m, __u32 tid, char *buf, size_t len)
{
	const struct bs_thread_snap *t = trace_snaps__thread(trace_model__snaps(m), tid);

	/* The job's own line, as the edges' rules and `bpfsight stacks` say it. */
	return stack_call__where(t ? trace_model__stack(m, t->stack_id) : NULL, m, buf, len);
}

/* "thread 12 \"prep\"" */
static const char *thread_label(const struct trace_model *m, __u32 tid, char *buf, size_t len)
{
	const char *name = trace_model__thread_name(m, tid);

	if (name && *name)
		snprintf(buf, len, "thread %u \"%s\"", tid, name);
	else
		snprintf(buf, len, "thread %u", tid);
	return buf;
}

/* Thread TID of PID as its snapshot says it: "it is in `f` (x.py:3), sleeping in read for 4.0 s". */
static const char *thread_doing(struct nccl_hang *h, const struct trace_model *m, __u32 pid,
				__u32 tid, char *buf, size_t len)
{
	const struct bs_thread_snap *t = trace_snaps__thread(trace_model__snaps(m), tid), *ht;
	const struct open_call *o = hmap__get(h->open, (struct hkey){ pid, tid }, 0);
	char where[320], hwhere[320], state[96], who[96];
	__u64 taken = nccl_hang__taken(m, pid);
	__u32 holder;

	if (!t) {
		snprintf(buf, len, "its threads were not read (no snapshot of it)");
		return buf;
	}
	nccl_hang__where(m, tid, where, sizeof(where));
	if (o && o->ts && taken > o->ts) {
		snprintf(buf, len, "it is in %s (called from %s) for %.1f s", o->name, where,
			 (taken - o->ts) / 1e9);
	} else if (t->flags & BS_SNAP_GIL_WAIT) {
		holder = gil_holder(m, pid);
		ht = holder ? trace_snaps__thread(trace_model__snaps(m), holder) : NULL;
		if (ht)
			snprintf(buf, len,
				 "it waits for the GIL in %s for %.1f s, held by %s, %s in %s",
				 where, t->off_cpu_ns / 1e9,
				 thread_label(m, holder, who, sizeof(who)),
				 thread_state__text(ht->state, ht->syscall, ht->flags, state,
						    sizeof(state)),
				 nccl_hang__where(m, holder, hwhere, sizeof(hwhere)));
		else
			snprintf(buf, len, "it waits for the GIL in %s for %.1f s", where,
				 t->off_cpu_ns / 1e9);
	} else if (t->flags & BS_SNAP_RUNNING) {
		snprintf(buf, len, "it is running in %s%s", where,
			 t->flags & BS_SNAP_GIL ? ", holding the GIL" : "");
	} else {
		thread_state__text(t->state, t->syscall, t->flags, state, sizeof(state));
		if (t->off_cpu_ns)
			snprintf(buf, len, "it is in %s, %s for %.1f s", where, state,
				 t->off_cpu_ns / 1e9);
		else
			snprintf(buf, len, "it is in %s, %s", where, state);
	}
	return buf;
}

const char *nccl_hang__doing(struct nccl_hang *h, const struct trace_model *m, __u32 pid, char *buf,
			     size_t len)
{
	__u64 taken = nccl_hang__taken(m, pid);
	const struct hang_rank *r;
	__u32 tid = pid;
	char fbuf[32];

	complete(h, m);
	for (size_t k = 0; k < h->n; k++) {
		r = &h->v[k];
		if (r->pid != pid || !r->group)
			continue;
		tid = r->tid;
		if (r->entered_open) {
			snprintf(buf, len,
				 "it waits in %s #%lld of communicator %016llx for %.1f s",
				 nccl_hang__fn(r->entered_fn, fbuf, sizeof(fbuf)),
				 (long long)r->entered, (unsigned long long)r->group,
				 taken > r->entered_ts ? (taken - r->entered_ts) / 1e9 : 0);
			return buf;
		}
	}
	return thread_doing(h, m, pid, tid, buf, len);
}

__u32 nccl_hang__rank_pid(struct nccl_hang *h, const struct trace_model *m, __u64 group, __s32 rank)
{
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_proc_snap *p;
	size_t i = 0;

	complete(h, m);
	for (size_t k = 0; k < h->n; k++)
		if (h->v[k].group == group && h->v[k].rank == rank)
			return h->v[k].pid;
	/* Not in the communicator's calls here: its environment says which process it is. */
	while ((p = trace_snaps__next_proc(s, &i)))
		if (p->env_rank == rank)
			return p->h.pid;
	return 0;
}

static int open_cmp(const void *a, const void *b)
{
	const struct open_ref *x = a, *y = b;

	if (x->o->ts != y->o->ts)
		return x->o->ts < y->o->ts ? -1 : 1;
	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1)
				: (x->tid > y->tid) - (x->tid < y->tid);
}

int nccl_hang__next_open(struct nccl_hang *h, size_t *i, __u32 *pid, __u32 *tid, const char **name,
			 __u64 *ts)
{
	const struct open_call *o;
	struct hkey key;
	size_t it = 0;

	/* Once the pass is over (no call is added any more): sorted by entry. */
	if (!h->have_opens) {
		h->have_opens = 1;
		h->opens = calloc(hmap__count(h->open) + 1, sizeof(*h->opens));
		while (h->opens && (o = hmap__next(h->open, &it, &key)))
			h->opens[h->nopens++] = (struct open_ref){ (__u32)key.a, (__u32)key.b, o };
		if (h->nopens)
			qsort(h->opens, h->nopens, sizeof(*h->opens), open_cmp);
	}
	if (*i >= h->nopens)
		return 0;
	*pid = h->opens[*i].pid;
	*tid = h->opens[*i].tid;
	*name = h->opens[*i].o->name;
	*ts = h->opens[*i].o->ts;
	(*i)++;
	return 1;
}

const char *nccl_hang__open_call(const struct nccl_hang *h, __u32 pid)
{
	const struct open_call *o;
	struct hkey key;
	size_t it = 0;

	while ((o = hmap__next(h->open, &it, &key)))
		if (key.a == pid)
			return o->name;
	return NULL;
}

static int coll_cmp(const void *a, const void *b)
{
	const struct hang_coll *x = a, *y = b;

	return x->waited_ns < y->waited_ns ? 1 : x->waited_ns > y->waited_ns ? -1 : 0;
}

/* Communicator at V[FIRST..END): its stop, when its ranks stopped at different collectives. */
static int judge(struct nccl_hang *h, const struct trace_model *m, size_t first, size_t end,
		 struct hang_coll *c)
{
	int open = 0, elsewhere = 0, in;

	memset(c, 0, sizeof(*c));
	c->group = h->v[first].group;
	c->seq = -1;
	c->nranks = -1;
	for (size_t k = first; k < end; k++) {
		if (h->v[k].entered > c->seq)
			c->seq = h->v[k].entered;
		if (h->v[k].nranks > c->nranks)
			c->nranks = h->v[k].nranks;
	}
	for (size_t k = first; k < end && c->seq >= 0; k++) {
		const struct hang_rank *r = &h->v[k];
		__u64 taken = nccl_hang__taken(m, r->pid);

		if (r->entered != c->seq)
			continue;
		if (!c->nwait) {
			c->fn = r->entered_fn;
			c->have_hash = r->have_hash;
			c->bytes = r->entered_bytes;
			c->bytes_known = r->bytes_known;
		}
		if (c->nwait < sizeof(c->wait) / sizeof(c->wait[0]))
			c->wait[c->nwait++] = r;
		open |= r->entered_open;
		elsewhere |= !r->entered_open && nccl_hang__open_call(h, r->pid);
		if (taken > r->entered_ts && taken - r->entered_ts > c->waited_ns)
			c->waited_ns = taken - r->entered_ts;
	}
	if (!open && !elsewhere)
		return 0; /* every rank left it: nothing waits */
	c->on_gpu = !open;
	/* The ranks that never entered it: of the communicator's size, or those seen behind. */
	for (__s32 rk = 0; rk < c->nranks && c->nmiss < sizeof(c->miss) / sizeof(c->miss[0]);
	     rk++) {
		in = 0;
		for (size_t k = 0; k < c->nwait && !in; k++)
			in = c->wait[k]->rank == rk;
		if (!in)
			c->miss[c->nmiss++] = rk;
	}
	for (size_t k = first; c->nranks < 0 && k < end; k++)
		if (h->v[k].entered < c->seq && h->v[k].rank >= 0 &&
		    c->nmiss < sizeof(c->miss) / sizeof(c->miss[0]))
			c->miss[c->nmiss++] = h->v[k].rank;
	return c->nmiss > 0;
}

const struct hang_coll *nccl_hang__colls(struct nccl_hang *h, const struct trace_model *m,
					 size_t *n)
{
	complete(h, m);
	if (!h->have_colls && nccl_hang__has_snapshot(h, m)) {
		h->have_colls = 1;
		for (size_t first = 0, end; first < h->n; first = end) {
			for (end = first; end < h->n && h->v[end].group == h->v[first].group; end++)
				;
			if (!h->v[first].group ||
			    array__grow((void **)&h->colls, h->ncolls, &h->ccap, sizeof(*h->colls)))
				continue;
			h->ncolls += judge(h, m, first, end, &h->colls[h->ncolls]);
		}
		if (h->ncolls)
			qsort(h->colls, h->ncolls, sizeof(*h->colls), coll_cmp);
	}
	*n = h->ncolls;
	return h->colls;
}
