// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The names a reader learns while walking a trace. Every name lives in one intern pool and is
 * never freed or moved before trace_model__free: a rename points the entry at another pooled
 * string instead of overwriting it, so a pointer handed out earlier (an event arg, a report
 * row) keeps the text it had when it was handed out.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "family.h"
#include "hmap.h"
#include "shim_records.h"
#include "thread_name.h"
#include "trace_model.h"
#include "trace_ranks.h"
#include "trace_snaps.h"

#define MODEL_MAX_FAMILIES 64

/* Open addressing, linear probing, load factor <= 1/2. */
struct pool_slot {
	char *str;
	__u32 hash;
	__u32 len;
};

struct pool {
	struct pool_slot *slots;
	__u32 cap; /* power of two, 0 before the first insert */
	__u32 n;
};

/* One table type for strings (id), processes (pid) and threads (tid). */
struct ent {
	__u32 key;
	__u32 used;
	const char *name; /* pooled; the comm of a process, the name of a thread, a string */
	__u32 cmdline_id;
	__u32 exe_id;
	__u32 app_named; /* threads: named by the application (nvtxNameOsThread), kept over comm */
	/* threads: the name Python's threading gave it (THREAD_NAME), and its process */
	const char *py_name;
	__u32 py_pid;
	/* processes: its parent (PROCESS, FORK); its place in a pool (trace_model__join_pool) */
	__u32 ppid;
	__u32 pool_owner, pool_n; /* its owner, and its place in the pool (from 0) */
	const char *pool_what, *owner_what, *role;
	const char *owns_what; /* it owns a pool, as this ("trainer") */
};

struct map {
	struct ent *ents;
	__u32 cap;
	__u32 n;
};

struct trace_model {
	struct pool pool;
	struct map strings;
	struct map procs;
	struct map threads;
	struct hmap *symbols;	   /* (pid, addr) -> string id, from SYMBOL records */
	struct hmap *stacks;	   /* id -> struct trace_stack *, from STACK records */
	struct hmap *event_stacks; /* (type << 32 | tid, ts) -> stack id, from STACK_REF records */
	struct trace_ranks *ranks; /* a merged file's, from RANK records (NULL: none yet) */
	struct trace_snaps *snaps; /* the hang trigger's snapshot (NULL: none yet) */
	struct bs_unwind_usage unwind;	 /* the latest UNWIND_USAGE record (h.type 0: none) */
	void *walks[MODEL_MAX_FAMILIES]; /* per families[] index: family.h walk state */
	int oom;	/* an allocation failed: some names are unknown (lookups say NULL) */
	__u64 start_ns; /* the recording's start (its header's CLOCK_MONOTONIC), 0: unknown */
	__u64 end_ns;	/* its end (the footer's), once the walk read the file whole; 0: unknown */
	/* The record the walk handed last, when it clipped it to the start: its own begin. */
	const struct bs_hdr *clipped;
	__u64 clipped_ts;
};

static __u32 hash_bytes(const char *s, __u32 len)
{
	__u32 h = 2166136261u; /* FNV-1a */
	__u32 i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static __u32 hash_u32(__u32 k)
{
	/* Murmur3's finalizer: pids and tids are dense, linear probing wants them spread. */
	k ^= k >> 16;
	k *= 0x85ebca6bu;
	k ^= k >> 13;
	k *= 0xc2b2ae35u;
	k ^= k >> 16;
	return k;
}

static int pool__grow(struct pool *p)
{
	__u32 ncap = p->cap ? p->cap * 2 : 256, i, j;
	struct pool_slot *ns;

	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 0; i < p->cap; i++) {
		if (!p->slots[i].str)
			continue;
		for (j = p->slots[i].hash & (ncap - 1); ns[j].str; j = (j + 1) & (ncap - 1))
			;
		ns[j] = p->slots[i];
	}
	free(p->slots);
	p->slots = ns;
	p->cap = ncap;
	return 0;
}

/* The pooled copy of S[0..LEN) (stops at an embedded NUL), or NULL when out of memory. */
static const char *pool__intern(struct pool *p, const char *s, __u32 len)
{
	struct pool_slot *sl;
	__u32 h, i;
	char *copy;

	len = strnlen(s, len);
	if ((p->n + 1) * 2 > p->cap && pool__grow(p))
		return NULL;
	h = hash_bytes(s, len);
	for (i = h & (p->cap - 1);; i = (i + 1) & (p->cap - 1)) {
		sl = &p->slots[i];
		if (!sl->str)
			break;
		if (sl->hash == h && sl->len == len && memcmp(sl->str, s, len) == 0)
			return sl->str;
	}
	copy = malloc(len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = 0;
	sl->str = copy;
	sl->hash = h;
	sl->len = len;
	p->n++;
	return copy;
}

static void pool__free(struct pool *p)
{
	__u32 i;

	for (i = 0; i < p->cap; i++)
		free(p->slots[i].str);
	free(p->slots);
}

static int map__grow(struct map *m)
{
	__u32 ncap = m->cap ? m->cap * 2 : 256, i, j;
	struct ent *ne;

	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->ents[i].used)
			continue;
		for (j = hash_u32(m->ents[i].key) & (ncap - 1); ne[j].used;
		     j = (j + 1) & (ncap - 1))
			;
		ne[j] = m->ents[i];
	}
	free(m->ents);
	m->ents = ne;
	m->cap = ncap;
	return 0;
}

static const struct ent *map__find(const struct map *m, __u32 key)
{
	__u32 i;

	if (!m->cap)
		return NULL;
	for (i = hash_u32(key) & (m->cap - 1); m->ents[i].used; i = (i + 1) & (m->cap - 1)) {
		if (m->ents[i].key == key)
			return &m->ents[i];
	}
	return NULL;
}

/* The entry of KEY, created zeroed when absent; NULL when out of memory. */
static struct ent *map__get(struct map *m, __u32 key)
{
	struct ent *e = (struct ent *)map__find(m, key);
	__u32 i;

	if (e)
		return e;
	if ((m->n + 1) * 2 > m->cap && map__grow(m))
		return NULL;
	for (i = hash_u32(key) & (m->cap - 1); m->ents[i].used; i = (i + 1) & (m->cap - 1))
		;
	e = &m->ents[i];
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->used = 1;
	m->n++;
	return e;
}

struct trace_model *trace_model__new(void)
{
	return calloc(1, sizeof(struct trace_model));
}

void trace_model__set_start(struct trace_model *m, __u64 mono_ns)
{
	m->start_ns = mono_ns;
}

__u64 trace_model__start(const struct trace_model *m)
{
	return m->start_ns;
}

void trace_model__set_end(struct trace_model *m, __u64 mono_ns)
{
	m->end_ns = mono_ns;
}

__u64 trace_model__end(const struct trace_model *m)
{
	return m->end_ns;
}

void trace_model__free(struct trace_model *m)
{
	if (!m)
		return;
	pool__free(&m->pool);
	free(m->strings.ents);
	free(m->procs.ents);
	free(m->threads.ents);
	hmap__free(m->symbols);
	hmap__free(m->event_stacks);
	trace_ranks__free(m->ranks);
	trace_snaps__free(m->snaps);
	if (m->stacks) {
		size_t it = 0;
		void *v;

		while ((v = hmap__next(m->stacks, &it, NULL)))
			free(*(struct trace_stack **)v);
		hmap__free(m->stacks);
	}
	for_each_family_while(fit, fit.i < MODEL_MAX_FAMILIES)
		if (m->walks[fit.i])
			fit.f->decode->walk_free(m->walks[fit.i]);
	free(m);
}

/* Point KEY's entry in MAP at the pooled S (n bytes, maybe unterminated). */
static struct ent *model__name(struct trace_model *m, struct map *map, __u32 key, const char *s,
			       __u32 n)
{
	const char *name = pool__intern(&m->pool, s, n);
	struct ent *e;

	if (!name) {
		m->oom = 1;
		return NULL;
	}
	e = map__get(map, key);
	if (!e) {
		m->oom = 1;
		return NULL;
	}
	e->name = name;
	return e;
}

/*
 * A thread's OS name (comm, snapshot). A name the application gave it through NVTX wins, as
 * nsys shows it, until the thread is replaced (FORK of its tid, EXEC: RESET).
 */
static void model__thread(struct trace_model *m, __u32 tid, const char *s, __u32 n, int reset)
{
	struct ent *e = (struct ent *)map__find(&m->threads, tid);

	if (e && e->app_named && !reset)
		return;
	e = model__name(m, &m->threads, tid, s, n);
	if (e)
		e->app_named = 0;
	if (e && reset)
		e->py_name = NULL; /* another thread, or another program */
}

/* A THREAD_NAME record: the thread's name in Python's threading. */
static void model__py_name(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_thread_name *t = (const void *)rec;
	const char *name;
	struct ent *e;

	if (rec->size < sizeof(*t))
		return; /* before name_id is read */
	name = trace_model__string(m, t->name_id);
	if (!name || !*name)
		return;
	e = map__get(&m->threads, rec->tid);
	if (!e) {
		m->oom = 1;
		return;
	}
	e->py_name = name;
	e->py_pid = rec->pid;
}

void trace_model__name_thread(struct trace_model *m, __u32 tid, const char *name)
{
	struct ent *e;

	if (!m || !name || !*name)
		return;
	e = model__name(m, &m->threads, tid, name, (__u32)strlen(name));
	if (e)
		e->app_named = 1;
}

void trace_model__name_process(struct trace_model *m, __u32 pid, const char *name)
{
	if (m && name && *name)
		model__name(m, &m->procs, pid, name, (__u32)strlen(name));
}

static void model__string(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_string *s = (const void *)rec;

	/* The text must lie inside the record: len is as untrusted as the rest of it. */
	if (rec->size < sizeof(*s) || s->len > rec->size - sizeof(*s) || !s->id)
		return;
	model__name(m, &m->strings, s->id, (const char *)(s + 1), s->len);
}

static void model__process(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_process *p = (const void *)rec;
	struct ent *e;

	if (rec->size < sizeof(*p))
		return;
	e = model__name(m, &m->procs, rec->pid, p->comm, sizeof(p->comm));
	if (!e)
		return;
	e->cmdline_id = p->cmdline_id;
	e->exe_id = p->exe_id;
	e->ppid = p->ppid;
	/* The process comm is its main thread's comm (what /proc/PID/comm shows). */
	model__thread(m, rec->tid ? rec->tid : rec->pid, p->comm, sizeof(p->comm), 0);
}

static void model__fork(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;
	const struct ent *parent;
	struct ent *e;

	if (rec->size < sizeof(*f))
		return;
	if (f->child_tid == f->child_pid) {
		/* A forked child runs its parent's image until it execs: same cmdline and exe. */
		e = model__name(m, &m->procs, f->child_pid, f->comm, sizeof(f->comm));
		parent = e ? map__find(&m->procs, rec->pid) : NULL;
		if (e)
			e->ppid = rec->pid;
		if (parent && parent != e) {
			e->cmdline_id = parent->cmdline_id;
			e->exe_id = parent->exe_id;
		}
	}
	model__thread(m, f->child_tid, f->comm, sizeof(f->comm), 1);
}

static void model__exec(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_exec *x = (const void *)rec;
	struct ent *e;

	if (rec->size < sizeof(*x))
		return;
	/* A new image: the old cmdline no longer applies; a PROCESS snapshot follows with it. */
	e = model__name(m, &m->procs, rec->pid, x->comm, sizeof(x->comm));
	if (e) {
		e->cmdline_id = 0;
		e->exe_id = 0;
	}
	/* After execve the caller is the leader: tid == pid. */
	model__thread(m, rec->pid, x->comm, sizeof(x->comm), 1);
	if (rec->tid != rec->pid)
		model__thread(m, rec->tid, x->comm, sizeof(x->comm), 1);
}

static void model__comm(struct trace_model *m, const struct bs_hdr *rec, const char *comm)
{
	struct ent *e;

	model__thread(m, rec->tid, comm, BS_COMM_LEN, 0);
	/* Renaming the main thread renames the process, as ps and /proc/PID/comm show it. */
	if (rec->tid == rec->pid) {
		e = (struct ent *)map__find(&m->procs, rec->pid);
		if (e)
			model__name(m, &m->procs, rec->pid, comm, BS_COMM_LEN);
	}
}

static void model__symbol(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_symbol *s = (const void *)rec;
	__u32 *id;

	if (rec->size < sizeof(*s) || !s->name_id)
		return;
	if (!m->symbols)
		m->symbols = hmap__new(sizeof(__u32));
	id = m->symbols ? hmap__get(m->symbols, (struct hkey){ rec->pid, s->addr }, 1) : NULL;
	if (!id) {
		m->oom = 1;
		return;
	}
	*id = s->name_id;
}

/* A STACK record: kept whole (the first definition of an id wins: ids are never reused). */
static void model__stack(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_stack *s = (const void *)rec;
	struct trace_stack **slot, *t;
	struct bs_frame *frames;

	if (rec->size < sizeof(*s) || !s->id ||
	    (rec->size - sizeof(*s)) / sizeof(struct bs_frame) < s->nframes)
		return;
	if (!m->stacks)
		m->stacks = hmap__new(sizeof(struct trace_stack *));
	slot = m->stacks ? hmap__get(m->stacks, (struct hkey){ s->id, 0 }, 1) : NULL;
	if (slot && *slot)
		return;
	t = malloc(sizeof(*t) + (size_t)s->nframes * sizeof(*frames));
	if (!slot || !t) {
		free(t);
		m->oom = 1;
		return;
	}
	frames = (struct bs_frame *)(t + 1);
	memcpy(frames, s + 1, (size_t)s->nframes * sizeof(*frames));
	*t = (struct trace_stack){ s->id, s->nframes, s->flags, frames };
	*slot = t;
}

int trace_model__add_said_stack(struct trace_model *m, __u32 id, const char *call,
				const char *where)
{
	size_t lc = call ? strlen(call) + 1 : 0, lw = strlen(where) + 1;
	struct trace_stack **slot, *t;
	char *text;

	if (!m->stacks)
		m->stacks = hmap__new(sizeof(struct trace_stack *));
	slot = m->stacks ? hmap__get(m->stacks, (struct hkey){ id, 0 }, 1) : NULL;
	if (!slot)
		return -ENOMEM;
	if (*slot)
		return 0;
	t = malloc(sizeof(*t) + lc + lw);
	if (!t)
		return -ENOMEM;
	text = (char *)(t + 1);
	*t = (struct trace_stack){ .id = id, .where = memcpy(text, where, lw) };
	if (call)
		t->call = memcpy(text + lw, call, lc);
	*slot = t;
	return 0;
}

/* A STACK_REF: the event of its type at (tid, ts) has that stack. */
static void model__stack_ref(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_stack_ref *r = (const void *)rec;
	__u64 *v;

	if (rec->size < sizeof(*r) || !r->stack_id)
		return;
	if (!m->event_stacks)
		m->event_stacks = hmap__new(sizeof(__u64));
	/* Keyed by the event's type too: a GIL wait and its first round share (tid, ts). */
	v = m->event_stacks
		    ? hmap__get(m->event_stacks,
				(struct hkey){ rec->tid | (__u64)r->event_type << 32, rec->ts }, 1)
		    : NULL;
	if (!v) {
		m->oom = 1;
		return;
	}
	*v = r->stack_id;
}

/* A RANK record of a merged file: its process shows as "rank 3 @ host". */
static void model__rank(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_rank *r = (const void *)rec;

	if (rec->size < sizeof(*r))
		return;
	if (!m->ranks)
		m->ranks = trace_ranks__new();
	if (!m->ranks || trace_ranks__add(m->ranks, r, trace_model__string(m, r->host_id),
					  trace_model__string(m, r->path_id)))
		m->oom = 1;
}

void trace_model__observe(struct trace_model *m, const struct bs_hdr *rec)
{
	if (!m || !rec || rec->size < sizeof(*rec))
		return;
	for_each_family_while(fit, fit.i < MODEL_MAX_FAMILIES) {
		if (!fit.f->decode->walk_new)
			continue;
		if (!m->walks[fit.i] && !(m->walks[fit.i] = fit.f->decode->walk_new())) {
			m->oom = 1;
			continue;
		}
		fit.f->decode->walk_observe(m->walks[fit.i], rec);
	}
	switch (rec->type) {
	case BS_REC_STRING:
		model__string(m, rec);
		break;
	case BS_REC_PROCESS:
		model__process(m, rec);
		break;
	case BS_REC_THREAD:
		if (rec->size >= sizeof(struct bs_thread))
			model__thread(m, rec->tid, ((const struct bs_thread *)rec)->name,
				      BS_COMM_LEN, 0);
		break;
	case BS_REC_FORK:
		model__fork(m, rec);
		break;
	case BS_REC_EXEC:
		model__exec(m, rec);
		break;
	case BS_REC_COMM:
		if (rec->size >= sizeof(struct bs_comm))
			model__comm(m, rec, ((const struct bs_comm *)rec)->comm);
		break;
	case BS_REC_THREAD_NAME:
		model__py_name(m, rec);
		break;
	case BS_REC_SYMBOL:
		model__symbol(m, rec);
		break;
	case BS_REC_STACK:
		model__stack(m, rec);
		break;
	case BS_REC_STACK_REF:
		model__stack_ref(m, rec);
		break;
	case BS_REC_RANK:
		model__rank(m, rec);
		break;
	case BS_REC_UNWIND_USAGE:
		if (rec->size < BS_UNWIND_USAGE_V1)
			break;
		memset(&m->unwind, 0, sizeof(m->unwind));
		memcpy(&m->unwind, rec,
		       rec->size < sizeof(m->unwind) ? rec->size : sizeof(m->unwind));
		/* Before the store every table was built. */
		if (rec->size < sizeof(m->unwind))
			m->unwind.built = m->unwind.files;
		break;
	case BS_REC_PROC_SNAP:
	case BS_REC_THREAD_SNAP:
		if (!m->snaps)
			m->snaps = trace_snaps__new();
		if (!m->snaps || trace_snaps__add(m->snaps, rec))
			m->oom = 1;
		break;
	default:
		break;
	}
	for_each_family_while(fit, fit.i < MODEL_MAX_FAMILIES)
		if (fit.f->decode->name_observe)
			fit.f->decode->name_observe(m, rec);
}

const char *trace_model__string(const struct trace_model *m, __u32 id)
{
	const struct ent *e = m ? map__find(&m->strings, id) : NULL;

	return e ? e->name : NULL;
}

__u32 trace_model__ppid(const struct trace_model *m, __u32 pid)
{
	const struct ent *e = m ? map__find(&m->procs, pid) : NULL;

	return e ? e->ppid : 0;
}

/* Name OWNER's pool members "WHAT N of OWNER_WHAT OWNER", N their order by pid from 0. */
static void name_pool(struct trace_model *m, __u32 owner)
{
	char buf[128];

	for (__u32 i = 0; i < m->procs.cap; i++) {
		struct ent *e = &m->procs.ents[i];
		__u32 n = 0;

		if (!e->used || !e->pool_what || e->pool_owner != owner)
			continue;
		for (__u32 k = 0; k < m->procs.cap; k++)
			n += m->procs.ents[k].used && m->procs.ents[k].pool_what &&
			     m->procs.ents[k].pool_owner == owner && m->procs.ents[k].key < e->key;
		snprintf(buf, sizeof(buf), "%s %u of %s %u", e->pool_what, n, e->owner_what, owner);
		e->role = pool__intern(&m->pool, buf, (__u32)strlen(buf));
		e->pool_n = n;
		if (!e->role)
			m->oom = 1;
	}
}

void trace_model__join_pool(struct trace_model *m, __u32 pid, __u32 owner, const char *what,
			    const char *owner_what)
{
	struct ent *e = m ? map__get(&m->procs, pid) : NULL;

	if (!e) {
		if (m)
			m->oom = 1;
		return;
	}
	if (e->pool_what && e->pool_owner == owner)
		return;
	e->pool_owner = owner;
	e->pool_what = what;
	e->owner_what = owner_what;
	name_pool(m, owner);
	e = map__get(&m->procs, owner); /* after: it may move the entries */
	if (e)
		e->owns_what = owner_what;
	else
		m->oom = 1;
}

const char *trace_model__pool(const struct trace_model *m, __u32 pid, __u32 *owner, __u32 *n)
{
	const struct ent *e = m ? map__find(&m->procs, pid) : NULL;

	if (!e || !e->pool_what)
		return e ? e->owns_what : NULL;
	*owner = e->pool_owner;
	*n = e->pool_n;
	return e->pool_what;
}

const char *trace_model__process_comm(const struct trace_model *m, __u32 pid)
{
	const struct ent *e = m ? map__find(&m->procs, pid) : NULL;

	if (e && e->name)
		return e->name;
	e = m ? map__find(&m->threads, pid) : NULL; /* its main thread was named */
	return e ? e->name : NULL;
}

const char *trace_model__process_role(const struct trace_model *m, __u32 pid)
{
	const struct ent *e = m ? map__find(&m->procs, pid) : NULL;

	return e ? e->role : NULL;
}

const char *trace_model__process_name(const struct trace_model *m, __u32 pid)
{
	const struct ent *e;

	if (!m)
		return NULL;
	/* A merged file's rank: one process track per rank, named after it. */
	if (m->ranks && trace_ranks__of_pid(m->ranks, pid))
		return trace_ranks__of_pid(m->ranks, pid)->label;
	e = map__find(&m->procs, pid);
	if (e && e->role)
		return e->role; /* its part in the job: "DataLoader worker 1 of trainer 4213" */
	if (e && e->name)
		return e->name;
	/* No snapshot of the process, but its main thread was named (e.g. a THREAD record). */
	e = map__find(&m->threads, pid);
	return e ? e->name : NULL;
}

const char *trace_model__cmdline(const struct trace_model *m, __u32 pid)
{
	const struct ent *e = m ? map__find(&m->procs, pid) : NULL;

	return e && e->cmdline_id ? trace_model__string(m, e->cmdline_id) : NULL;
}

/* A thread's name: an NVTX name; else Python's or its comm, as thread_name.h picks. */
const char *trace_model__thread_name(const struct trace_model *m, __u32 tid)
{
	const struct ent *e = m ? map__find(&m->threads, tid) : NULL;
	const struct ent *p;

	if (!e || !e->py_name || e->app_named)
		return e ? e->name : NULL;
	p = map__find(&m->procs, e->py_pid);
	return thread_name__pick(e->py_name, e->name, trace_model__cmdline(m, e->py_pid),
				 p && p->exe_id ? trace_model__string(m, p->exe_id) : NULL);
}

int trace_model__own_thread(const struct trace_model *m, __u32 tid)
{
	const struct ent *e = m ? map__find(&m->threads, tid) : NULL;

	return e && e->name && !strcmp(e->name, BS_SHIM_THREAD_NAME);
}

const char *trace_model__symbol(const struct trace_model *m, __u32 pid, __u64 addr)
{
	const __u32 *id;

	if (!m || !m->symbols)
		return NULL;
	id = hmap__get(m->symbols, (struct hkey){ pid, addr }, 0);
	return id ? trace_model__string(m, *id) : NULL;
}

const struct trace_stack *trace_model__stack(const struct trace_model *m, __u32 id)
{
	struct trace_stack **slot;

	if (!m || !m->stacks || !id)
		return NULL;
	slot = hmap__get(m->stacks, (struct hkey){ id, 0 }, 0);
	return slot ? *slot : NULL;
}

const struct trace_stack *trace_model__stack_of(const struct trace_model *m, __u16 type, __u32 tid,
						__u64 ts)
{
	__u64 *v;

	if (!m || !m->event_stacks)
		return NULL;
	v = hmap__get(m->event_stacks, (struct hkey){ tid | (__u64)type << 32, ts }, 0);
	return v ? trace_model__stack(m, (__u32)*v) : NULL;
}

const struct trace_stack *trace_model__event_stack(const struct trace_model *m,
						   const struct bs_hdr *rec)
{
	return trace_model__stack_of(m, rec->type, rec->tid, trace_model__began(m, rec));
}

void trace_model__set_clipped(struct trace_model *m, const struct bs_hdr *rec, __u64 began)
{
	m->clipped = rec;
	m->clipped_ts = began;
}

__u64 trace_model__began(const struct trace_model *m, const struct bs_hdr *rec)
{
	return m && rec == m->clipped ? m->clipped_ts : rec->ts;
}

const struct trace_snaps *trace_model__snaps(const struct trace_model *m)
{
	return m->snaps;
}

void *trace_model__walk(const struct trace_model *m, const struct family *f)
{
	for_each_family_while(fit, m && fit.i < MODEL_MAX_FAMILIES)
		if (fit.f == f)
			return m->walks[fit.i];
	return NULL;
}

const struct trace_rank *trace_model__rank(const struct trace_model *m, __u32 pid)
{
	return m ? trace_ranks__find(m->ranks, pid) : NULL;
}

const struct trace_ranks *trace_model__ranks(const struct trace_model *m)
{
	return m ? m->ranks : NULL;
}

const struct bs_unwind_usage *trace_model__unwind_usage(const struct trace_model *m)
{
	return m && m->unwind.h.type ? &m->unwind : NULL;
}
