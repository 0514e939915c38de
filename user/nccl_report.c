// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of nccl: API-call events (read through the args strings of the API table,
 * nccl_api.c documents their format), the walk that joins communicator pointers with their
 * rank/nranks and tracks group nesting, and the nccl_sum and nccl_comm_sum reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl.h"
#include "stats_math.h"
#include "table.h"
#include "time_sum.h"

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

/* What an args field can be; the shown key, and how its value is shown. */
enum nccl_key {
	K_SENDBUFF,
	K_RECVBUFF,
	K_BUFF,
	K_COUNT,
	K_DATATYPE,
	K_OP,
	K_ROOT,
	K_PEER,
	K_COMM,
	K_NEWCOMM,
	K_STREAM,
	K_RANK,
	K_NRANKS,
	K_NDEV,
	K_DEVLIST,
	K_COLOR,
	K_KEY,
	K_CONFIG,
	K_EXCLUDE,
	K_NEXCLUDE,
	K_NID,
	K_FLAGS,
	K_SIZE,
	K_HANDLE,
	K_DEVICE,
	K_UNIQUE_ID,
	K_COMMS,
	K_NR,
};

enum nccl_show { SHOW_HEX, SHOW_U64, SHOW_S32, SHOW_DATATYPE, SHOW_OP, SHOW_ID, SHOW_COMMS };

static const struct {
	const char *name;
	const char *shown; /* the event arg's key */
	__u8 show;
} keys[K_NR] = {
	[K_SENDBUFF] = { "sendbuff", "sendbuff", SHOW_HEX },
	[K_RECVBUFF] = { "recvbuff", "recvbuff", SHOW_HEX },
	[K_BUFF] = { "buff", "buff", SHOW_HEX },
	[K_COUNT] = { "count", "count", SHOW_U64 },
	[K_DATATYPE] = { "datatype", "datatype", SHOW_DATATYPE },
	[K_OP] = { "op", "op", SHOW_OP },
	[K_ROOT] = { "root", "root", SHOW_S32 },
	[K_PEER] = { "peer", "peer", SHOW_S32 },
	[K_COMM] = { "comm", "comm", SHOW_HEX },
	[K_NEWCOMM] = { "newcomm", "newcomm", SHOW_HEX },
	[K_STREAM] = { "stream", "stream", SHOW_HEX },
	[K_RANK] = { "rank", "rank", SHOW_S32 },
	[K_NRANKS] = { "nranks", "nranks", SHOW_S32 },
	[K_NDEV] = { "ndev", "ndev", SHOW_S32 },
	[K_DEVLIST] = { "devlist", "devlist", SHOW_HEX },
	[K_COLOR] = { "color", "color", SHOW_S32 },
	[K_KEY] = { "key", "key", SHOW_S32 },
	[K_CONFIG] = { "config", "config", SHOW_HEX },
	[K_EXCLUDE] = { "exclude", "exclude", SHOW_HEX },
	[K_NEXCLUDE] = { "nexclude", "nexclude", SHOW_S32 },
	[K_NID] = { "nid", "nid", SHOW_S32 },
	[K_FLAGS] = { "flags", "flags", SHOW_S32 },
	[K_SIZE] = { "size", "size", SHOW_U64 },
	[K_HANDLE] = { "handle", "handle", SHOW_HEX },
	[K_DEVICE] = { "device", "device", SHOW_S32 },
	[K_UNIQUE_ID] = { "unique_id", "unique_id_hash", SHOW_ID },
	[K_COMMS] = { "comms", "comms", SHOW_COMMS },
};

#define NCCL_MAX_FIELDS 12

/* One call, its args string applied to its record. */
struct nccl_call {
	const struct bs_ucall *r;
	const struct ucall_api *api; /* NULL: a function of a newer table */
	__s32 ret;		     /* ncclResult_t is an int: rax's upper half is undefined */
	int ok;			     /* ncclSuccess or ncclInProgress */
	__u32 have;		     /* 1u << K_*: fields with a value */
	__u64 v[K_NR];		     /* K_UNIQUE_ID: the hash; K_COMMS: how many follow */
	__u8 order[NCCL_MAX_FIELDS]; /* the fields in args order */
	__u32 nfields;
	int out_key;	   /* the field shown from bs_ucall.out, -1 = none */
	const __u8 *deref; /* NULL when the record has no (complete) copy */
	__u32 deref_len;
};

static int key_of(const char *s, size_t n)
{
	for (int k = 0; k < K_NR; k++)
		if (strlen(keys[k].name) == n && !strncmp(keys[k].name, s, n))
			return k;
	return -1;
}

static int is_s32_key(int k)
{
	return keys[k].show == SHOW_S32 || keys[k].show == SHOW_DATATYPE || keys[k].show == SHOW_OP;
}

static void call__set(struct nccl_call *c, int k, __u64 v)
{
	if (is_s32_key(k))
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

/* Parse REC (a BS_REC_NCCL_CALL of at least sizeof(struct bs_ucall)) into C. */
static void call__parse(const struct bs_hdr *rec, struct nccl_call *c)
{
	const struct bs_ucall *r = (const void *)rec;
	__u32 reg = 0, stack = 0, word, n;
	const char *p;
	int k;

	memset(c, 0, sizeof(*c));
	c->r = r;
	c->api = ucall_table__api(&nccl_table, r->fn);
	c->ret = (__s32)r->ret;
	c->ok = c->ret == NCCL_SUCCESS || c->ret == NCCL_IN_PROGRESS;
	c->out_key = -1;
	if (r->deref_len && rec->size >= sizeof(*r) + (__u32)r->deref_len) {
		c->deref = (const __u8 *)(r + 1);
		c->deref_len = r->deref_len;
	}
	if (!c->api || !c->api->args)
		return;
	for (p = c->api->args; *p;) {
		int deref = 0, written = 0, byval = 0;

		p += strspn(p, " ");
		if (!*p)
			break;
		if (*p == '&') {
			deref = 1;
			p++;
		}
		if (*p == '*') {
			written = 1;
			p++;
		}
		n = strcspn(p, " !");
		k = key_of(p, n);
		p += n;
		if (*p == '!') {
			byval = 1;
			p++;
		}
		if (byval) {
			stack += NCCL_ID_BYTES / 8; /* memory class: stack words only */
			if (k == K_UNIQUE_ID)
				call__set_id(c);
			continue;
		}
		word = reg < 6 ? reg++ : 6 + stack++;
		if (written && !deref && k >= 0)
			c->out_key = k;
		if (k < 0 || (written && !c->ok))
			continue; /* unknown key (the unit test forbids it), or nothing written */
		if (deref) {
			if (k == K_UNIQUE_ID)
				call__set_id(c);
			else if (k == K_COMMS && c->deref)
				call__set(c, K_COMMS, 0); /* counted once ndev is known */
		} else if (written) {
			call__set(c, k, r->out);
		} else if (word < BS_UCALL_NARGS) {
			call__set(c, k, r->args[word]);
		}
	}
	if (c->have & (1u << K_COMMS)) {
		__s64 ndev = (c->have & (1u << K_NDEV)) ? (__s64)c->v[K_NDEV] : 0;
		__u32 max = c->deref_len / 8;

		c->v[K_COMMS] = ndev < 0 ? 0 : (__u64)ndev < max ? (__u64)ndev : max;
	}
}

int nccl_api__check(const struct ucall_api *a, char *why, size_t len)
{
	int nout = 0, nderef = 0, nbyval = 0, k, have_ndev = 0, have_comms = 0;
	__u32 reg = 0, stack = 0, word, n, idx = 0;
	const char *p;

#define FAIL(...) return snprintf(why, len, __VA_ARGS__), -EINVAL
	if (!a->args)
		FAIL("%s: no args string", a->name);
	for (p = a->args; *p; idx++) {
		int deref = 0, written = 0, byval = 0;

		p += strspn(p, " ");
		if (!*p)
			break;
		if (*p == '&') {
			deref = 1;
			p++;
		}
		if (*p == '*') {
			written = 1;
			p++;
		}
		n = strcspn(p, " !");
		k = key_of(p, n);
		if (k < 0)
			FAIL("%s: unknown key '%.*s'", a->name, (int)n, p);
		p += n;
		if (*p == '!') {
			byval = 1;
			p++;
		}
		have_ndev |= k == K_NDEV;
		have_comms |= k == K_COMMS;
		if (byval) {
			if (k != K_UNIQUE_ID || deref || written)
				FAIL("%s: only unique_id is passed by value", a->name);
			if (a->deref_arg != BS_DEREF_ARG_STACK || a->deref_off8 ||
			    a->deref_mode != BS_DEREF_STRUCT)
				FAIL("%s: a by-value id needs deref_arg BS_DEREF_ARG_STACK",
				     a->name);
			stack += NCCL_ID_BYTES / 8;
			nbyval++;
			continue;
		}
		word = reg < 6 ? reg++ : 6 + stack++;
		if (word >= BS_UCALL_NARGS)
			FAIL("%s: '%s' is argument word %u, past the %d captured", a->name,
			     keys[k].name, word, BS_UCALL_NARGS);
		if (deref) {
			if (a->deref_arg != word + 1 || a->deref_mode != BS_DEREF_STRUCT ||
			    a->deref_off8)
				FAIL("%s: &%s is argument word %u: deref_arg must be %u", a->name,
				     keys[k].name, word, word + 1);
			if (k != K_UNIQUE_ID && k != K_COMMS)
				FAIL("%s: only unique_id and comms are read from the copy",
				     a->name);
			nderef++;
		} else if (written) {
			if (a->out_arg != word + 1)
				FAIL("%s: *%s is argument word %u: out_arg must be %u", a->name,
				     keys[k].name, word, word + 1);
			nout++;
		} else if (k == K_UNIQUE_ID || k == K_COMMS) {
			FAIL("%s: %s needs & or !", a->name, keys[k].name);
		}
	}
	if (nout > 1 || (a->out_arg && !nout))
		FAIL("%s: out_arg %u without exactly one *field", a->name, a->out_arg);
	if (nderef + nbyval > 1 || (a->deref_arg && !(nderef + nbyval)))
		FAIL("%s: deref_arg %u without exactly one & or ! field", a->name, a->deref_arg);
	if (have_comms && !have_ndev)
		FAIL("%s: comms needs ndev", a->name);
	if ((a->flags & (NCCL_F_GROUP_START | NCCL_F_GROUP_END)) && idx)
		FAIL("%s: group calls take no arguments", a->name);
#undef FAIL
	return 0;
}

static __u64 call__comms(const struct nccl_call *c, __u32 i)
{
	__u64 v;

	memcpy(&v, c->deref + i * 8, sizeof(v)); /* the copy is only 8-byte aligned by luck */
	return v;
}

/* count x type size, or 0 when either is unknown. */
static __u64 call__bytes(const struct nccl_call *c, int *known)
{
	int size = (c->have & (1u << K_DATATYPE)) ? nccl__datatype_size((int)c->v[K_DATATYPE]) : 0;

	*known = size && (c->have & (1u << K_COUNT));
	return *known ? c->v[K_COUNT] * (__u64)size : 0;
}

static int call__is_op(const struct nccl_call *c)
{
	return c->api && (c->api->group == NCCL_GRP_COLL || c->api->group == NCCL_GRP_P2P);
}

/*
 * The walk. Records are written at return, so a thread's records come in the order its calls
 * returned: a group's ncclGroupStart before the calls inside it, its ncclGroupEnd after them.
 */
#define NCCL_GROUP_TS_MAX 16

struct nccl_thread {
	__u32 group_depth;
	__u32 _pad;
	__u64 start_ts[NCCL_GROUP_TS_MAX]; /* entry time of each open ncclGroupStart */
};

/* What the walk knew about the record it observed last. */
struct nccl_ctx {
	__u64 ts; /* identifies the record: ts, pid, tid */
	__u32 pid, tid;
	__u32 group_depth;
	__u32 have_comm;
	__u64 group_start_ts;  /* ncclGroupEnd: entry of the matching ncclGroupStart, 0 = unknown */
	struct nccl_comm comm; /* the comm argument, when have_comm */
};

struct nccl_walk {
	struct hmap *by_ptr;	/* {pid, comm} -> __u32 serial of the current instance */
	struct hmap *by_serial; /* {serial, 0} -> struct nccl_comm */
	struct hmap *threads;	/* {pid, tid} -> struct nccl_thread */
	__u32 next_serial;
	int err;
	int have_last;
	struct nccl_ctx last;
	struct nccl_call call; /* the last record, parsed */
};

struct nccl_walk *nccl_walk__new(void)
{
	struct nccl_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->by_ptr = hmap__new(sizeof(__u32));
	w->by_serial = hmap__new(sizeof(struct nccl_comm));
	w->threads = hmap__new(sizeof(struct nccl_thread));
	if (!w->by_ptr || !w->by_serial || !w->threads) {
		nccl_walk__free(w);
		return NULL;
	}
	return w;
}

void nccl_walk__free(struct nccl_walk *w)
{
	if (!w)
		return;
	hmap__free(w->by_ptr);
	hmap__free(w->by_serial);
	hmap__free(w->threads);
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

/* The communicator at COMM in PID, first seen now when the walk never saw its init. */
static struct nccl_comm *walk__comm(struct nccl_walk *w, __u32 pid, __u64 comm)
{
	__u32 *serial;

	if (!comm)
		return NULL;
	serial = hmap__get(w->by_ptr, (struct hkey){ pid, comm }, 0);
	if (serial)
		return hmap__get(w->by_serial, (struct hkey){ *serial, 0 }, 0);
	return walk__new_comm(w, pid, comm);
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
		break;
	case K_NEWCOMM: /* split/shrink: rank and size depend on every rank's arguments */
		nc = c->v[K_NEWCOMM] ? walk__new_comm(w, pid, c->v[K_NEWCOMM]) : NULL;
		if (nc)
			nc->parent = (c->have & (1u << K_COMM)) ? c->v[K_COMM] : 0;
		break;
	case K_NRANKS: /* ncclCommCount */
	case K_RANK:   /* ncclCommUserRank */
		nc = (c->have & (1u << K_COMM)) ? walk__comm(w, pid, c->v[K_COMM]) : NULL;
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

void nccl_walk__observe(struct nccl_walk *w, const struct bs_hdr *rec)
{
	const struct nccl_comm *comm;
	struct nccl_call *c;

	if (!w || !rec || rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	c = &w->call;
	call__parse(rec, c);
	memset(&w->last, 0, sizeof(w->last));
	w->last.ts = rec->ts;
	w->last.pid = rec->pid;
	w->last.tid = rec->tid;
	w->have_last = 1;
	walk__groups(w, c, rec);
	if (!c->api)
		return;
	walk__learn(w, c, rec->pid);
	comm = (c->have & (1u << K_COMM)) && c->v[K_COMM] ? walk__comm(w, rec->pid, c->v[K_COMM])
							  : NULL;
	if (comm) {
		w->last.comm = *comm;
		w->last.have_comm = 1;
	}
}

/* The walk's context for REC, when REC is the record it observed last. */
static const struct nccl_ctx *walk__ctx(const struct nccl_walk *w, const struct bs_hdr *rec)
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
	const char *key = keys[k].shown, *name;
	__u64 v = c->v[k], bytes;
	int known;

	switch (keys[k].show) {
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
		bytes = call__bytes(c, &known);
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
	const struct nccl_ctx *ctx = walk__ctx(w, rec);
	struct nccl_call c;
	const char *err;

	call__parse(rec, &c);
	if (c.api) {
		ev->name = c.api->name;
	} else {
		snprintf(ev->namebuf, sizeof(ev->namebuf), "nccl_fn_%u", c.r->fn);
		ev->name = ev->namebuf;
	}
	ev->dur = c.r->dur;
	event__arg_s64(ev, "ret", c.ret);
	if (c.ret != NCCL_SUCCESS) {
		err = nccl__result_name(c.ret);
		if (err)
			event__arg_str(ev, "error", err);
		else
			arg_fmt(ev, "error", "ncclResult_%lld", c.ret);
	}
	for (__u32 i = 0; i < c.nfields; i++)
		decode_field(ev, &c, c.order[i]);
	if (c.r->depth)
		event__arg_u64(ev, "depth", c.r->depth);
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
	return nccl__decode(rec, m, trace_model__walk(m, &family_nccl), ev);
}

/*
 * Kineto has no host-side NCCL category (torch records its own ops as cpu_op; HTA reads
 * collectives from the GPU's ncclDevKernel_* kernels): the calls get their own. They nest like
 * CUDA calls (ncclBroadcast inside ncclBcast): on the thread's track.
 */
static const struct export_style call_style = { .cat = "nccl", .ph = 'X', .on_thread = 1 };

const struct rec_decoder nccl_decoders[] = {
	{ BS_REC_NCCL_CALL, sizeof(struct bs_ucall), "nccl_api", decode_nccl_call, &call_style },
	{ 0 },
};

/*
 * nccl_sum: per function, the calls the application made (depth 0: ncclBcast's inner
 * ncclBroadcast is not counted twice). Host-side call times: a collective's GPU time is in
 * the gpu family's kernels (ncclDevKernel_*).
 */
struct nccl_fn {
	struct samples samples;
	__u64 count, total, min, max, bytes, errors;
	int has_bytes;
};

struct nccl_sum {
	struct hmap *by_fn; /* {fn, 0} -> struct nccl_fn */
	int err;
};

static void *nccl_sum__new(void)
{
	struct nccl_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->by_fn = hmap__new(sizeof(struct nccl_fn));
	if (!st->by_fn) {
		free(st);
		return NULL;
	}
	return st;
}

static void nccl_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct nccl_sum *st = vst;
	struct nccl_call c;
	struct nccl_fn *f;
	__u64 bytes;
	int known;

	if (rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	call__parse(rec, &c);
	if (c.r->depth)
		return;
	f = hmap__get(st->by_fn, (struct hkey){ c.r->fn, 0 }, 1);
	if (!f || samples__add(&f->samples, (double)c.r->dur, 1)) {
		st->err = -ENOMEM;
		return;
	}
	if (!f->count || c.r->dur < f->min)
		f->min = c.r->dur;
	if (c.r->dur > f->max)
		f->max = c.r->dur;
	f->count++;
	f->total += c.r->dur;
	if (!c.ok)
		f->errors++;
	bytes = call__bytes(&c, &known);
	if (call__is_op(&c) && known) {
		f->bytes += bytes;
		f->has_bytes = 1;
	}
}

struct nccl_sum_row {
	char name[48]; /* a copy: rows move while sorting */
	struct nccl_fn *f;
};

static int nccl_sum_row_cmp(const void *a, const void *b)
{
	const struct nccl_sum_row *x = a, *y = b;

	/* nsys orders by total time, descending; ties by name keep the output stable. */
	if (x->f->total != y->f->total)
		return x->f->total < y->f->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void fn_name(__u32 fn, char *buf, size_t len)
{
	const struct ucall_api *api = ucall_table__api(&nccl_table, fn);

	if (api)
		snprintf(buf, len, "%s", api->name);
	else
		snprintf(buf, len, "nccl_fn_%u", fn);
}

static int nccl_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct nccl_sum_row *rows;
	struct nccl_sum *st = vst;
	size_t it = 0, nrows = 0;
	long double grand = 0;
	struct nccl_fn *f;
	struct hkey key;
	int c[11], err;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->by_fn) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((f = hmap__next(st->by_fn, &it, &key))) {
		rows[nrows].f = f;
		fn_name((__u32)key.a, rows[nrows].name, sizeof(rows[nrows].name));
		grand += f->total;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), nccl_sum_row_cmp);

	time_sum__cols(t, c);
	c[8] = table__add_col(t, "bytes", "Bytes", TABLE_U64);
	c[9] = table__add_col(t, "errors", "Errors", TABLE_U64);
	c[10] = table__add_col(t, "name", "Name", TABLE_STR);
	for (size_t i = 0; i < nrows; i++) {
		f = rows[i].f;
		table__row(t);
		time_sum__set(t, c, f->count, f->total, f->min, f->max, &f->samples, grand);
		if (f->has_bytes)
			table__set_u64(t, c[8], f->bytes);
		table__set_u64(t, c[9], f->errors);
		table__set_str(t, c[10], rows[i].name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static void nccl_sum__free(void *vst)
{
	struct nccl_sum *st = vst;
	struct nccl_fn *f;
	size_t it = 0;

	if (!st)
		return;
	while ((f = hmap__next(st->by_fn, &it, NULL)))
		samples__free(&f->samples);
	hmap__free(st->by_fn);
	free(st);
}

static const struct report nccl_sum = {
	.name = "nccl_sum",
	.desc = "NCCL API Summary (host-side call time)",
	.new = nccl_sum__new,
	.add = nccl_sum__add,
	.emit = nccl_sum__emit,
	.free = nccl_sum__free,
};

/*
 * nccl_comm_sum: per communicator instance the walk knows (created by a traced init, or
 * first seen as an argument), its identity and the collective / point-to-point calls made
 * on it (depth 0). Rank and nranks learnt late (ncclCommUserRank after -p) count for the
 * whole row.
 */
struct nccl_comm_ops {
	__u64 ops, bytes, total;
};

struct nccl_comm_sum {
	struct nccl_walk *w;
	struct hmap *by_serial; /* {serial, 0} -> struct nccl_comm_ops */
	int err;
};

static void nccl_comm_sum__free(void *vst)
{
	struct nccl_comm_sum *st = vst;

	if (!st)
		return;
	nccl_walk__free(st->w);
	hmap__free(st->by_serial);
	free(st);
}

static void *nccl_comm_sum__new(void)
{
	struct nccl_comm_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->w = nccl_walk__new();
	st->by_serial = hmap__new(sizeof(struct nccl_comm_ops));
	if (!st->w || !st->by_serial) {
		nccl_comm_sum__free(st);
		return NULL;
	}
	return st;
}

static void nccl_comm_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct nccl_comm_sum *st = vst;
	const struct nccl_ctx *ctx;
	struct nccl_comm_ops *o;
	__u64 bytes;
	int known;

	if (rec->type != BS_REC_NCCL_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	nccl_walk__observe(st->w, rec);
	ctx = walk__ctx(st->w, rec);
	if (!ctx || !ctx->have_comm || st->w->call.r->depth || !call__is_op(&st->w->call))
		return;
	o = hmap__get(st->by_serial, (struct hkey){ ctx->comm.serial, 0 }, 1);
	if (!o) {
		st->err = -ENOMEM;
		return;
	}
	o->ops++;
	o->total += st->w->call.r->dur;
	bytes = call__bytes(&st->w->call, &known);
	o->bytes += bytes;
}

static int comm_cmp(const void *a, const void *b)
{
	const struct nccl_comm *x = *(const struct nccl_comm *const *)a;
	const struct nccl_comm *y = *(const struct nccl_comm *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int nccl_comm_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	struct nccl_comm_sum *st = vst;
	const struct nccl_comm_ops *o;
	struct nccl_comm **rows, *cm;
	size_t it = 0, nrows = 0;
	char buf[24];
	int c[9], err;

	if (st->err || st->w->err)
		return st->err ? st->err : st->w->err;
	rows = calloc(hmap__count(st->w->by_serial) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((cm = hmap__next(st->w->by_serial, &it, NULL)))
		rows[nrows++] = cm;
	qsort(rows, nrows, sizeof(*rows), comm_cmp);

	c[0] = table__add_col(t, "pid", "PID", TABLE_U64);
	c[1] = table__add_col(t, "comm", "Communicator", TABLE_STR);
	c[2] = table__add_col(t, "rank", "Rank", TABLE_S64);
	c[3] = table__add_col(t, "nranks", "NRanks", TABLE_S64);
	c[4] = table__add_col(t, "unique_id_hash", "Unique Id Hash", TABLE_STR);
	c[5] = table__add_col(t, "operations", "Operations", TABLE_U64);
	c[6] = table__add_col(t, "bytes", "Bytes", TABLE_U64);
	c[7] = table__add_col(t, "total_ns", "Total Time (ns)", TABLE_U64);
	c[8] = table__add_col(t, "parent", "Parent", TABLE_STR);
	for (size_t i = 0; i < nrows; i++) {
		cm = rows[i];
		o = hmap__get(st->by_serial, (struct hkey){ cm->serial, 0 }, 0);
		table__row(t);
		table__set_u64(t, c[0], cm->pid);
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)cm->comm);
		table__set_str(t, c[1], buf);
		if (cm->rank >= 0)
			table__set_s64(t, c[2], cm->rank);
		if (cm->nranks >= 0)
			table__set_s64(t, c[3], cm->nranks);
		if (cm->have_hash) {
			snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)cm->id_hash);
			table__set_str(t, c[4], buf);
		}
		table__set_u64(t, c[5], o ? o->ops : 0);
		table__set_u64(t, c[6], o ? o->bytes : 0);
		table__set_u64(t, c[7], o ? o->total : 0);
		if (cm->parent) {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)cm->parent);
			table__set_str(t, c[8], buf);
		}
	}
	err = table__err(t);
	free(rows);
	return err;
}

static const struct report nccl_comm_sum = {
	.name = "nccl_comm_sum",
	.desc = "NCCL Communicator Summary",
	.new = nccl_comm_sum__new,
	.add = nccl_comm_sum__add,
	.emit = nccl_comm_sum__emit,
	.free = nccl_comm_sum__free,
};

const struct report *const nccl_reports[] = { &nccl_sum, &nccl_comm_sum, NULL };
