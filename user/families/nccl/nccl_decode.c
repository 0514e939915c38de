// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of nccl: API-call records read through their compiled argument specs (the
 * grammar is ucall_spec.h's, the keys nccl_api.c's), the walk that joins communicator pointers
 * with their rank/nranks and tracks group nesting, and the event a call shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_decode.h"
#include "hmap.h"

/* nccl.h's enums, by value. */
static const char *const result_names[] = {
	"ncclSuccess",	       "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage",	 "ncclRemoteError", "ncclInProgress",
};
static const char *const datatype_names[] = {
	"ncclInt8",    "ncclUint8",    "ncclInt32",	 "ncclUint32",
	"ncclInt64",   "ncclUint64",   "ncclFloat16",	 "ncclFloat32",
	"ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2",
};
static const __u8 datatype_sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
static const char *const op_names[] = { "ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg" };

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

const char *nccl__result_name(int ret)
{
	return ret >= 0 && (unsigned)ret < NELEMS(result_names) ? result_names[ret] : NULL;
}

const char *nccl__datatype_name(int dt)
{
	return dt >= 0 && (unsigned)dt < NELEMS(datatype_names) ? datatype_names[dt] : NULL;
}

int nccl__datatype_size(int dt)
{
	return dt >= 0 && (unsigned)dt < NELEMS(datatype_sizes) ? datatype_sizes[dt] : 0;
}

const char *nccl__op_name(int op)
{
	return op >= 0 && (unsigned)op < NELEMS(op_names) ? op_names[op] : NULL;
}

__u64 nccl__id_hash(const void *id)
{
	const __u8 *b = id;
	__u64 h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis and prime */

	for (int i = 0; i < NCCL_ID_BYTES; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

enum nccl_show { SHOW_HEX, SHOW_U64, SHOW_S32, SHOW_DATATYPE, SHOW_OP, SHOW_ID, SHOW_COMMS };

/* How the event shows each key: its arg's key and value. */
static const struct {
	const char *shown;
	__u8 show;
} shows[K_NR] = {
	[K_SENDBUFF] = { "sendbuff", SHOW_HEX },
	[K_RECVBUFF] = { "recvbuff", SHOW_HEX },
	[K_BUFF] = { "buff", SHOW_HEX },
	[K_COUNT] = { "count", SHOW_U64 },
	[K_DATATYPE] = { "datatype", SHOW_DATATYPE },
	[K_OP] = { "op", SHOW_OP },
	[K_ROOT] = { "root", SHOW_S32 },
	[K_PEER] = { "peer", SHOW_S32 },
	[K_COMM] = { "comm", SHOW_HEX },
	[K_NEWCOMM] = { "newcomm", SHOW_HEX },
	[K_STREAM] = { "stream", SHOW_HEX },
	[K_RANK] = { "rank", SHOW_S32 },
	[K_NRANKS] = { "nranks", SHOW_S32 },
	[K_NDEV] = { "ndev", SHOW_S32 },
	[K_DEVLIST] = { "devlist", SHOW_HEX },
	[K_COLOR] = { "color", SHOW_S32 },
	[K_KEY] = { "key", SHOW_S32 },
	[K_CONFIG] = { "config", SHOW_HEX },
	[K_EXCLUDE] = { "exclude", SHOW_HEX },
	[K_NEXCLUDE] = { "nexclude", SHOW_S32 },
	[K_NID] = { "nid", SHOW_S32 },
	[K_FLAGS] = { "flags", SHOW_S32 },
	[K_SIZE] = { "size", SHOW_U64 },
	[K_HANDLE] = { "handle", SHOW_HEX },
	[K_DEVICE] = { "device", SHOW_S32 },
	[K_UNIQUE_ID] = { "unique_id_hash", SHOW_ID },
	[K_COMMS] = { "comms", SHOW_COMMS },
	[K_WORK] = { "work", SHOW_HEX },
};

static void call__set(struct nccl_call *c, int k, __u64 v)
{
	if (nccl_keys[k].type == UCALL_T_S32)
		v = (__u64)(__s64)(__s32)v; /* a C int: the low half of its word */
	c->v[k] = v;
	if (!(c->have & (1u << k)) && c->nfields < NCCL_MAX_FIELDS)
		c->order[c->nfields++] = (__u8)k;
	c->have |= 1u << k;
}

/* A deref'd ncclUniqueId: hashed unless missing or all zero (the copy faulted). */
static void call__set_id(struct nccl_call *c)
{
	static const __u8 zero[NCCL_ID_BYTES];

	if (!c->deref || c->deref_len < NCCL_ID_BYTES || !memcmp(c->deref, zero, NCCL_ID_BYTES))
		return;
	call__set(c, K_UNIQUE_ID, nccl__id_hash(c->deref));
}

void nccl_call__parse(const struct bs_hdr *rec, struct nccl_call *c)
{
	const struct bs_ucall *r = (const void *)rec;
	const struct ucall_spec *s;
	struct ucall_spec tmp;

	memset(c, 0, sizeof(*c));
	c->r = r;
	c->api = ucall_table__api(&nccl_table, r->fn);
	c->ret = (__s32)r->ret;
	c->open = !!(r->depth & BS_UCALL_OPEN);
	c->depth = BS_UCALL_DEPTH(r->depth);
	/* A call in flight wrote nothing yet: its out values are not read. */
	c->ok = !c->open && (c->ret == NCCL_SUCCESS || c->ret == NCCL_IN_PROGRESS);
	/* gloo's nextTag returns a tag, no ncclResult_t: one that returned worked. */
	if (c->api && (c->api->flags & NCCL_F_GLOO))
		c->ok = !c->open;
	c->out_key = -1;
	if (r->deref_len && rec->size >= sizeof(*r) + (__u32)r->deref_len) {
		c->deref = (const __u8 *)(r + 1);
		c->deref_len = r->deref_len;
	}
	if (!c->api)
		return;
	s = ucall_table__spec(&nccl_table, r->fn, &tmp);
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (f->src == UCALL_SRC_OUT)
			c->out_key = f->key;
		if (f->written && !c->ok)
			continue; /* nothing written (yet) */
		switch (f->src) {
		case UCALL_SRC_WORD:
			call__set(c, f->key, r->args[f->word]);
			break;
		case UCALL_SRC_OUT:
			call__set(c, f->key, r->out);
			break;
		case UCALL_SRC_COPY: /* unique_id or comms: the only keys of type mem */
			if (f->key == K_UNIQUE_ID)
				call__set_id(c);
			else if (c->deref)
				call__set(c, K_COMMS, 0); /* counted once ndev is known */
			break;
		case UCALL_SRC_AT: { /* a gloo process group's members */
			__u64 v;

			if (ucall_field__value(rec, s, f, &v))
				call__set(c, f->key, v);
			break;
		}
		default: /* no nccl key is a constant */
			break;
		}
	}
	if (c->have & (1u << K_COMMS)) {
		__s64 ndev = (c->have & (1u << K_NDEV)) ? (__s64)c->v[K_NDEV] : 0;
		__u32 max = c->deref_len / 8;

		c->v[K_COMMS] = ndev < 0 ? 0 : (__u64)ndev < max ? (__u64)ndev : max;
	}
}

static __u64 call__comms(const struct nccl_call *c, __u32 i)
{
	__u64 v;

	memcpy(&v, c->deref + i * 8, sizeof(v)); /* the copy is only 8-byte aligned by luck */
	return v;
}

__u64 nccl_call__bytes(const struct nccl_call *c, int *known)
{
	int size = (c->have & (1u << K_DATATYPE)) ? nccl__datatype_size((int)c->v[K_DATATYPE]) : 0;

	*known = size && (c->have & (1u << K_COUNT));
	return *known ? c->v[K_COUNT] * (__u64)size : 0;
}

int nccl_call__is_op(const struct nccl_call *c)
{
	return c->api && (c->api->group == NCCL_GRP_COLL || c->api->group == NCCL_GRP_P2P);
}

#define NCCL_GROUP_TS_MAX 16

struct nccl_thread {
	__u32 group_depth;
	__u32 gloo_tagged; /* gloo_tag is the tag of a collective whose work comes next */
	__u64 start_ts[NCCL_GROUP_TS_MAX]; /* entry time of each open ncclGroupStart */
	struct nccl_gloo_work gloo_tag;
};

void *nccl_walk__new(void)
{
	struct nccl_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->by_ptr = hmap__new(sizeof(__u32));
	w->by_serial = hmap__new(sizeof(struct nccl_comm));
	w->threads = hmap__new(sizeof(struct nccl_thread));
	w->inferred = hmap__new(sizeof(__u32));
	w->bases = hmap__new(sizeof(__u64));
	w->works = hmap__new(sizeof(struct nccl_gloo_work));
	if (!w->by_ptr || !w->by_serial || !w->threads || !w->inferred || !w->bases || !w->works) {
		nccl_walk__free(w);
		return NULL;
	}
	return w;
}

void nccl_walk__free(void *vw)
{
	struct nccl_walk *w = vw;

	if (!w)
		return;
	hmap__free(w->by_ptr);
	hmap__free(w->by_serial);
	hmap__free(w->threads);
	hmap__free(w->inferred);
	hmap__free(w->bases);
	hmap__free(w->works);
	free(w);
}

int nccl_walk__err(const struct nccl_walk *w)
{
	return w ? w->err : -EINVAL;
}

const struct nccl_comm *nccl_walk__comm(const struct nccl_walk *w, __u32 pid, __u64 comm)
{
	const __u32 *serial;

	if (!w || !comm)
		return NULL;
	serial = hmap__get(w->by_ptr, (struct hkey){ pid, comm }, 0);
	return serial ? hmap__get(w->by_serial, (struct hkey){ *serial, 0 }, 0) : NULL;
}

/* FNV-1a of "nccl comm #K" ("gloo pg #K"): equal to a real unique-id hash by chance only. */
static __u64 inferred_group(__u32 k, int gloo)
{
	char buf[32];
	__u64 h = 0xcbf29ce484222325ull;
	int n = snprintf(buf, sizeof(buf), "%s #%u", gloo ? "gloo pg" : "nccl comm", k);

	for (int i = 0; i < n; i++) {
		h ^= (unsigned char)buf[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * Name C in every process: by its unique-id hash, else as this process's k-th communicator
 * whose creation was not seen with one (what other ranks recorded alike will call theirs),
 * and count its collectives from a merged file's SYNC_BASE for it, if any.
 */
static void walk__name_group(struct nccl_walk *w, struct nccl_comm *c)
{
	const __u64 *base;
	__u32 *k;

	if (c->have_hash) {
		c->group = c->id_hash;
		c->inferred = 0;
	} else {
		/* gloo's process groups are counted apart: NCCL's communicators do not shift them */
		k = hmap__get(w->inferred, (struct hkey){ c->pid, c->gloo }, 1);
		if (!k) {
			w->err = -ENOMEM;
			return;
		}
		c->group = inferred_group(++*k, c->gloo);
		c->inferred = 1;
	}
	base = hmap__get(w->bases, (struct hkey){ c->pid, c->group }, 0);
	c->ncoll = base ? *base : 0;
}

/* A new communicator at COMM in PID (an init returned it): replaces an earlier one there. */
static struct nccl_comm *walk__new_comm(struct nccl_walk *w, __u32 pid, __u64 comm)
{
	struct nccl_comm *c;
	__u32 *serial;

	serial = hmap__get(w->by_ptr, (struct hkey){ pid, comm }, 1);
	if (!serial)
		goto oom;
	*serial = ++w->next_serial;
	c = hmap__get(w->by_serial, (struct hkey){ *serial, 0 }, 1);
	if (!c)
		goto oom;
	c->comm = comm;
	c->pid = pid;
	c->serial = w->next_serial;
	c->rank = -1;
	c->nranks = -1;
	return c;
oom:
	w->err = -ENOMEM;
	return NULL;
}

/*
 * The communicator at COMM in PID, first seen now when the walk never saw its init (GLOO: a
 * gloo process group, whose creation is never traced).
 */
static struct nccl_comm *walk__comm(struct nccl_walk *w, __u32 pid, __u64 comm, int gloo)
{
	__u32 *serial;

	if (!comm)
		return NULL;
	struct nccl_comm *c;

	serial = hmap__get(w->by_ptr, (struct hkey){ pid, comm }, 0);
	if (serial)
		return hmap__get(w->by_serial, (struct hkey){ *serial, 0 }, 0);
	c = walk__new_comm(w, pid, comm);
	if (c) {
		c->gloo = !!gloo;
		walk__name_group(w, c);
	}
	return c;
}

/* Communicators the call created or described. */
static void walk__learn(struct nccl_walk *w, const struct nccl_call *c, __u32 pid)
{
	struct nccl_comm *nc;

	if (!c->ok)
		return;
	switch (c->out_key) {
	case K_COMM: /* ncclCommInitRank and friends: out is the new communicator */
		nc = c->v[K_COMM] ? walk__new_comm(w, pid, c->v[K_COMM]) : NULL;
		if (!nc)
			break;
		nc->rank = (c->have & (1u << K_RANK)) ? (__s32)c->v[K_RANK] : -1;
		nc->nranks = (c->have & (1u << K_NRANKS)) ? (__s32)c->v[K_NRANKS] : -1;
		nc->have_hash = !!(c->have & (1u << K_UNIQUE_ID));
		nc->id_hash = c->v[K_UNIQUE_ID];
		walk__name_group(w, nc);
		break;
	case K_NEWCOMM: /* split/shrink: rank and size depend on every rank's arguments */
		nc = c->v[K_NEWCOMM] ? walk__new_comm(w, pid, c->v[K_NEWCOMM]) : NULL;
		if (nc) {
			nc->parent = (c->have & (1u << K_COMM)) ? c->v[K_COMM] : 0;
			walk__name_group(w, nc);
		}
		break;
	case K_NRANKS: /* ncclCommCount */
	case K_RANK:   /* ncclCommUserRank */
		nc = (c->have & (1u << K_COMM)) ? walk__comm(w, pid, c->v[K_COMM], 0) : NULL;
		if (nc && c->out_key == K_NRANKS)
			nc->nranks = (__s32)c->v[K_NRANKS];
		else if (nc)
			nc->rank = (__s32)c->v[K_RANK];
		break;
	default:
		break;
	}
	/* ncclCommInitAll: comms[i] is rank i of ndev. */
	for (__u32 i = 0; (c->have & (1u << K_COMMS)) && i < c->v[K_COMMS]; i++) {
		__u64 comm = call__comms(c, i);

		nc = comm ? walk__new_comm(w, pid, comm) : NULL;
		if (nc) {
			nc->rank = (__s32)i;
			nc->nranks = (__s32)c->v[K_NDEV];
			walk__name_group(w, nc);
		}
	}
}

static void walk__groups(struct nccl_walk *w, const struct nccl_call *c, const struct bs_hdr *rec)
{
	struct nccl_thread *t = hmap__get(w->threads, (struct hkey){ rec->pid, rec->tid }, 1);

	if (!t) {
		w->err = -ENOMEM;
		return;
	}
	if (c->api && (c->api->flags & NCCL_F_GROUP_START)) {
		/* NCCL counts the group even when ncclGroupStart reports an error. */
		w->last.group_depth = t->group_depth;
		if (t->group_depth < NCCL_GROUP_TS_MAX)
			t->start_ts[t->group_depth] = rec->ts;
		t->group_depth++;
	} else if (c->api && (c->api->flags & NCCL_F_GROUP_END)) {
		/* Without an open group NCCL refuses the End (ncclInvalidUsage) and counts nothing. */
		if (t->group_depth) {
			t->group_depth--;
			if (t->group_depth < NCCL_GROUP_TS_MAX)
				w->last.group_start_ts = t->start_ts[t->group_depth];
		}
		w->last.group_depth = t->group_depth;
	} else {
		w->last.group_depth = t->group_depth;
	}
}

/* A merged file's SYNC_BASE: the process's collectives on GROUP count from BASE there. */
static void walk__sync_base(struct nccl_walk *w, const struct bs_sync_base *b)
{
	__u64 *v = hmap__get(w->bases, (struct hkey){ b->h.pid, b->group }, 1);

	if (!v)
		w->err = -ENOMEM;
	else
		*v = b->base;
}

/*
 * A flight-recorder dump's communicator (its creation before the window): as its creation
 * said it, its collectives counting from the dump's BASE.
 */
static void walk__known_comm(struct nccl_walk *w, const struct bs_nccl_comm *r)
{
	struct nccl_comm *c = r->comm ? walk__new_comm(w, r->h.pid, r->comm) : NULL;

	if (!c)
		return;
	c->rank = r->rank;
	c->nranks = r->nranks;
	c->parent = r->parent;
	c->have_hash = !!(r->flags & BS_NCCL_COMM_HASH);
	c->id_hash = r->id_hash;
	walk__name_group(w, c);
	c->ncoll = r->base;
}

void nccl_walk__forget(struct nccl_walk *w, __u32 pid)
{
	struct nccl_comm *c;
	struct hkey key;
	size_t it = 0;

	hmap__del_all(w->by_ptr, 0, pid);
	hmap__del_all(w->threads, 0, pid);
	hmap__del_all(w->inferred, 0, pid);
	hmap__del_all(w->bases, 0, pid);
	hmap__del_all(w->works, 0, pid);
	while ((c = hmap__next(w->by_serial, &it, &key)))
		if (c->pid == pid) {
			hmap__del(w->by_serial, key);
			it = 0;
		}
}

/*
 * A gloo call on process group COMM (ProcessGroupGloo::nextTag): the group's rank and size
 * (its own members), and the collective it stands for, numbered by the tag it returned.
 */
static void walk__gloo(struct nccl_walk *w, const struct nccl_call *c, struct nccl_comm *comm,
		       const struct bs_hdr *rec)
{
	__s64 rank = (__s32)c->v[K_RANK], nranks = (__s32)c->v[K_NRANKS];
	struct nccl_thread *t;

	/* read from the object: kept only when they make sense (another torch's layout won't) */
	if ((c->have & (1u << K_RANK)) && (c->have & (1u << K_NRANKS)) && rank >= 0 &&
	    rank < nranks && nranks <= (1 << 24)) {
		comm->rank = (__s32)rank;
		comm->nranks = (__s32)nranks;
	}
	if (!(c->api->flags & NCCL_F_GLOO_TAG) || !c->ok || c->depth ||
	    c->api->group != NCCL_GRP_COLL)
		return;
	w->last.coll_seq = (__u32)c->r->ret;
	/* the thread's next work is this collective's (walk__gloo_work) */
	t = hmap__get(w->threads, (struct hkey){ rec->pid, rec->tid }, 0);
	if (t) {
		t->gloo_tag = (struct nccl_gloo_work){ comm->comm, rec->ts, (__u32)c->r->ret };
		t->gloo_tagged = 1;
	}
}

/*
 * A gloo collective's work: made on the collective's thread right after its tag (tied to
 * it), finished on a worker thread (the collective's end there: the context says which).
 */
static void walk__gloo_work(struct nccl_walk *w, const struct nccl_call *c,
			    const struct bs_hdr *rec)
{
	struct nccl_gloo_work *g;
	struct nccl_comm *comm;
	struct nccl_thread *t;
	struct hkey key;

	if (!(c->have & (1u << K_WORK)) || !c->v[K_WORK])
		return;
	key = (struct hkey){ rec->pid, c->v[K_WORK] };
	if (c->api->flags & NCCL_F_GLOO_WORK) {
		t = hmap__get(w->threads, (struct hkey){ rec->pid, rec->tid }, 0);
		if (!t || !t->gloo_tagged)
			return; /* a work without a tag (its nextTag before the recording) */
		t->gloo_tagged = 0;
		g = hmap__get(w->works, key, 1);
		if (!g)
			w->err = -ENOMEM;
		else
			*g = t->gloo_tag;
		return;
	}
	g = hmap__get(w->works, key, 0);
	if (!g)
		return;
	comm = walk__comm(w, rec->pid, g->comm, 1);
	if (comm) {
		w->last.coll_seq = g->tag;
		w->last.gloo_end = 1;
		w->last.enter_ts = g->enter_ts;
		w->last.comm = *comm;
		w->last.have_comm = 1;
	}
	hmap__del(w->works, key);
}

void nccl_walk__observe(void *vw, const struct bs_hdr *rec)
{
	struct nccl_walk *w = vw;
	struct nccl_comm *comm;
	struct nccl_call *c;
	int gloo;

	if (w && rec && rec->type == BS_REC_SYNC_BASE && rec->size >= sizeof(struct bs_sync_base)) {
		walk__sync_base(w, (const void *)rec);
		return;
	}
	if (w && rec && rec->type == BS_REC_NCCL_COMM && rec->size >= sizeof(struct bs_nccl_comm)) {
		walk__known_comm(w, (const void *)rec);
		return;
	}
	if (!w || !rec || rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	c = &w->call;
	nccl_call__parse(rec, c);
	memset(&w->last, 0, sizeof(w->last));
	w->last.ts = rec->ts;
	w->last.pid = rec->pid;
	w->last.tid = rec->tid;
	w->last.coll_seq = -1;
	w->have_last = 1;
	walk__groups(w, c, rec);
	if (!c->api)
		return;
	walk__learn(w, c, rec->pid);
	if (c->api->flags & (NCCL_F_GLOO_WORK | NCCL_F_GLOO_DONE)) {
		walk__gloo_work(w, c, rec);
		return;
	}
	gloo = !!(c->api->flags & NCCL_F_GLOO);
	comm = (c->have & (1u << K_COMM)) && c->v[K_COMM]
		       ? walk__comm(w, rec->pid, c->v[K_COMM], gloo)
		       : NULL;
	if (!comm)
		return;
	/*
	 * Its sequence number: every rank makes a communicator's collectives in one order. One
	 * in flight (a hang trigger's snapshot) is the communicator's next: the last record of
	 * its thread. A gloo collective's is its tag.
	 */
	if (gloo)
		walk__gloo(w, c, comm, rec);
	else if ((c->ok || c->open) && !c->depth && c->api->group == NCCL_GRP_COLL)
		w->last.coll_seq = (__s64)comm->ncoll++;
	w->last.open = c->open;
	w->last.comm = *comm;
	w->last.have_comm = 1;
}

const struct nccl_ctx *nccl_walk__ctx(const struct nccl_walk *w, const struct bs_hdr *rec)
{
	if (!w || !w->have_last || w->last.ts != rec->ts || w->last.pid != rec->pid ||
	    w->last.tid != rec->tid)
		return NULL;
	return &w->last;
}

/* Decoder. */
static void arg_fmt(struct event *ev, const char *key, const char *fmt, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), fmt, v);
	event__arg_strn(ev, key, buf, sizeof(buf));
}

static void arg_hash(struct event *ev, const char *key, __u64 h)
{
	char buf[20];

	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)h);
	event__arg_strn(ev, key, buf, sizeof(buf));
}

static int ev_has(const struct event *ev, const char *key)
{
	for (__u32 i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].key, key))
			return 1;
	return 0;
}

static void decode_comms(struct event *ev, const struct nccl_call *c)
{
	char buf[sizeof(ev->strbuf)];
	size_t used = 0;
	int n;

	buf[0] = 0;
	for (__u32 i = 0; i < c->v[K_COMMS]; i++) {
		n = snprintf(buf + used, sizeof(buf) - used, "%s0x%llx", i ? "," : "",
			     (unsigned long long)call__comms(c, i));
		if (n < 0 || (size_t)n >= sizeof(buf) - used) {
			buf[used] = 0; /* whole handles only */
			break;
		}
		used += n;
	}
	event__arg_strn(ev, "comms", buf, sizeof(buf));
}

static void decode_field(struct event *ev, const struct nccl_call *c, int k)
{
	const char *key = shows[k].shown, *name;
	__u64 v = c->v[k], bytes;
	int known;

	switch (shows[k].show) {
	case SHOW_HEX:
		event__arg_hex(ev, key, v);
		break;
	case SHOW_U64:
		event__arg_u64(ev, key, v);
		break;
	case SHOW_S32:
		event__arg_s64(ev, key, (__s32)v);
		break;
	case SHOW_DATATYPE:
		name = nccl__datatype_name((__s32)v);
		if (name)
			event__arg_str(ev, key, name);
		else
			arg_fmt(ev, key, "ncclDataType_%lld", (__s32)v);
		bytes = nccl_call__bytes(c, &known);
		if (known)
			event__arg_u64(ev, "bytes", bytes);
		break;
	case SHOW_OP:
		name = nccl__op_name((__s32)v);
		if (name)
			event__arg_str(ev, key, name);
		else /* ncclRedOpCreatePreMulSum's, numbered from ncclNumOps */
			arg_fmt(ev, key, "ncclRedOp_%lld", (__s32)v);
		break;
	case SHOW_ID:
		arg_hash(ev, key, v);
		break;
	case SHOW_COMMS:
		decode_comms(ev, c);
		break;
	}
}

int nccl__decode(const struct bs_hdr *rec, const struct trace_model *m, const struct nccl_walk *w,
		 struct event *ev)
{
	const struct nccl_ctx *ctx = nccl_walk__ctx(w, rec);
	struct nccl_call c;
	const char *err;
	int gloo;

	nccl_call__parse(rec, &c);
	if (c.api) {
		ev->name = ucall_api__shown(c.api);
	} else {
		snprintf(ev->namebuf, sizeof(ev->namebuf), "nccl_fn_%u", c.r->fn);
		ev->name = ev->namebuf;
	}
	ev->dur = c.r->dur;
	gloo = c.api && (c.api->flags & NCCL_F_GLOO);
	if (c.open)
		event__arg_bool(ev, "in_flight", 1); /* dur: its time so far; no ret yet */
	else if (gloo && (c.api->flags & NCCL_F_GLOO_TAG))
		event__arg_u64(ev, "tag", (__u32)c.r->ret);
	else if (!gloo) /* a gloo method's rax is where its Work went */
		event__arg_s64(ev, "ret", c.ret);
	if (!c.open && !gloo && c.ret != NCCL_SUCCESS) {
		err = nccl__result_name(c.ret);
		if (err)
			event__arg_str(ev, "error", err);
		else
			arg_fmt(ev, "error", "ncclResult_%lld", c.ret);
	}
	for (__u32 i = 0; i < c.nfields; i++)
		decode_field(ev, &c, c.order[i]);
	if (c.depth)
		event__arg_u64(ev, "depth", c.depth);
	if (!ctx)
		return 1;
	/* The communicator's identity, where the call itself does not say it. */
	if (ctx->have_comm) {
		if (ctx->comm.rank >= 0 && !ev_has(ev, "rank"))
			event__arg_s64(ev, "rank", ctx->comm.rank);
		if (ctx->comm.nranks >= 0 && !ev_has(ev, "nranks"))
			event__arg_s64(ev, "nranks", ctx->comm.nranks);
		if (ctx->comm.have_hash && !ev_has(ev, "unique_id_hash"))
			arg_hash(ev, "unique_id_hash", ctx->comm.id_hash);
		if (ctx->comm.parent && !ev_has(ev, "parent"))
			event__arg_hex(ev, "parent", ctx->comm.parent);
	}
	if (ctx->coll_seq >= 0)
		event__arg_u64(ev, "seq", (__u64)ctx->coll_seq);
	if (ctx->group_depth)
		event__arg_u64(ev, "group_depth", ctx->group_depth);
	if (ctx->group_start_ts && c.r->h.ts + c.r->dur >= ctx->group_start_ts)
		event__arg_u64(ev, "group_ns", c.r->h.ts + c.r->dur - ctx->group_start_ts);
	return 1;
}

/*
 * Registered decoder: stateless until the readers hand decoders a walk (see docs/NCCL.md,
 * "Communicators"): calls then show what they say themselves, without rank/nranks joins
 * or group depth.
 */
static int decode_nccl_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=nccl */
	return nccl__decode(rec, m, trace_model__walk(m, &family_nccl), ev);
}

/*
 * Kineto has no host-side NCCL category (torch records its own ops as cpu_op; HTA reads
 * collectives from the GPU's ncclDevKernel_* kernels): the calls get their own. They nest like
 * CUDA calls (ncclBroadcast inside ncclBcast): on the thread's track.
 */
static const struct export_style call_style = { .cat = "nccl", .ph = 'X', .on_thread = 1 };

const struct rec_decoder nccl_decoders[] = {
	{ BS_REC_NCCL_CALL, sizeof(struct bs_ucall), "nccl_api", decode_nccl_call, &call_style,
	  .span = 1 },
	/* A dump's communicators at its window's start: the walk reads them. */
	{ BS_REC_NCCL_COMM, sizeof(struct bs_nccl_comm), "nccl_comm", family__decode_meta },
	{ 0 },
};
