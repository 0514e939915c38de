// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NVTX recording: push/pop stacks per thread, start/end ranges per process, marks, names,
 * domains and registered strings, and what a drain or an attach needs from them. The
 * handlers (shim_nvtx_inject.c) come here through the fast paths of shim_nvtx.h only while
 * recording (or to restart the poller in a forked child).
 *
 * While on: push/start remember the range, pop/end write a RANGE record, marks and names
 * write theirs; strings are interned at the call (the caller's text need not live on).
 * Thread and category names are kept even while off (they are given once, usually before a
 * tracer attaches) and sent again at every attach. A forked child keeps its parent's category
 * names (not its thread names: those threads are not in the child) and sends them with its
 * first record rather than at its first attach: that attach may come before the recorder's
 * link covers the child (its semaphores are copies of the parent's), and go unheard.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim_nvtx.h"

#define STACK_MAX     128   /* recorded push/pop ranges open on one thread */
#define RANGES_MAX    65536 /* recorded start/end ranges open in the process */
#define RANGE_BUCKETS 4096

/* What a range or mark says. */
struct ev {
	struct shim_str *name;
	uint64_t payload;
	uint32_t category;
	uint32_t color;
	uint16_t flags;
};

struct open_range {
	uint64_t ts;
	struct ev ev;
	nvtxDomainHandle_t domain;
	uint16_t depth;
};

struct nvtx_thread {
	uint32_t epoch; /* stacks of an earlier recording period are stale */
	uint32_t n;
	struct open_range stack[STACK_MAX];
};

struct started {
	struct started *next;
	uint64_t id;
	uint32_t tid;
	uint32_t epoch;
	struct open_range r;
};

struct name_entry {
	struct name_entry *next;
	uint32_t kind; /* BS_NVTX_NAME_* */
	uint32_t tid;  /* who named it */
	uint64_t key;
	nvtxDomainHandle_t domain;
	struct shim_str *name;
};

__thread int32_t shim_nvtx_depth[SHIM_NVTX_DOMAINS];
_Atomic uint64_t shim_nvtx_last_range_id;
static _Atomic uint32_t epoch;

/* Domains, registered strings, names, started ranges (never taken holding a thread lock). */
pthread_mutex_t shim_nvtx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtxDomainRegistration_st *domains;
static uint32_t ndomains;
static struct nvtxStringRegistration_st *registered;
static struct name_entry *names;
static struct started *started[RANGE_BUCKETS];
static uint32_t nstarted;
/* A forked child: the names it kept are sent with its first record (see the top). */
static _Atomic bool names_owed;

static void send_names(struct shim_thread *t, uint32_t session);

static struct shim_str *domain_name(nvtxDomainHandle_t d)
{
	return d ? d->name : NULL;
}

#define ATTR_MIN_SIZE (offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t))

bool shim_nvtx__attr_ok(const nvtxEventAttributes_t *a)
{
	return a && a->size >= ATTR_MIN_SIZE;
}

static void ev_parse(struct ev *e, const struct shim_nvtx_src *src)
{
	const nvtxEventAttributes_t *a = src->attr;
	nvtxStringHandle_t reg;

	memset(e, 0, sizeof(*e));
	if (src->a) {
		e->name = shim_str__intern_c(src->a);
		return;
	}
	if (src->w) {
		e->name = shim_str__intern_wide(src->w);
		return;
	}
	if (!shim_nvtx__attr_ok(a))
		return;
	e->category = a->category;
	if (a->colorType == NVTX_COLOR_ARGB) {
		e->flags |= BS_NVTX_COLOR;
		e->color = a->color;
	}
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
	case NVTX_PAYLOAD_TYPE_INT64:
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		e->payload = a->payload.ullValue;
		e->flags |= (uint16_t)(a->payloadType << 4);
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
	case NVTX_PAYLOAD_TYPE_INT32:
	case NVTX_PAYLOAD_TYPE_FLOAT:
		e->payload = a->payload.uiValue; /* the raw 32 bits */
		e->flags |= (uint16_t)(a->payloadType << 4);
		break;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		e->name = shim_str__intern_c(a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		e->name = shim_str__intern_wide(a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		reg = a->message.registered;
		if (reg) {
			e->name = reg->str;
			e->flags |= BS_NVTX_REGISTERED;
		}
		break;
	}
}

/* The calling thread's NVTX state, stale stacks emptied (t locked). */
static struct nvtx_thread *thread_state(struct shim_thread *t, bool create)
{
	void **slot = shim_thread__nvtx(t);
	struct nvtx_thread *nt = *slot;
	uint32_t now = atomic_load_explicit(&epoch, memory_order_relaxed);

	if (!nt && create) {
		nt = calloc(1, sizeof(*nt));
		if (!nt)
			return NULL;
		nt->epoch = now;
		*slot = nt;
	}
	if (nt && nt->epoch != now) {
		nt->n = 0;
		nt->epoch = now;
	}
	return nt;
}

void shim_nvtx__thread_gone(void *state)
{
	free(state);
}

static void range_record(struct shim_thread *t, uint32_t session, const struct open_range *r,
			 uint32_t tid, uint32_t end_tid, uint64_t end, uint64_t range_id,
			 uint16_t flags)
{
	uint32_t me = shim_thread__tid(t);
	struct bs_nvtx_range rec;

	memset(&rec, 0, sizeof(rec));
	shim_hdr(&rec.h, BS_REC_NVTX_RANGE, sizeof(rec), tid, r->ts);
	rec.dur = end > r->ts ? end - r->ts : 0;
	rec.range_id = range_id;
	rec.payload = r->ev.payload;
	rec.name_id = shim_str__use(r->ev.name, session, me);
	rec.domain_id = shim_str__use(domain_name(r->domain), session, me);
	rec.end_tid = end_tid;
	rec.category = r->ev.category;
	rec.color = r->ev.color;
	rec.depth = r->depth;
	rec.flags = r->ev.flags | flags;
	shim_thread__append(t, session, &rec, sizeof(rec));
}

/* Sync mode (--capture-range=nvtx): the range began; sent at once. */
static void begin_record(struct shim_thread *t, uint32_t session, const struct open_range *r,
			 uint64_t range_id)
{
	uint32_t me = shim_thread__tid(t);
	struct bs_nvtx_begin rec;

	memset(&rec, 0, sizeof(rec));
	shim_hdr(&rec.h, BS_REC_NVTX_BEGIN, sizeof(rec), me, r->ts);
	rec.range_id = range_id;
	rec.name_id = shim_str__use(r->ev.name, session, me);
	rec.domain_id = shim_str__use(domain_name(r->domain), session, me);
	if (shim_thread__append(t, session, &rec, sizeof(rec)))
		shim_thread__flush(t);
}

/*
 * The common start of every recording slow path: the session to record in and the
 * calling thread's buffer, or 0 when nothing is to be recorded.
 */
static uint32_t recording(uint32_t hot, struct shim_thread **t)
{
	uint32_t session;

	if (hot & SHIM_HOT_RESTART)
		shim_core__restart();
	if (!(hot & SHIM_HOT_NVTX))
		return 0;
	session = atomic_load_explicit(&shim_session, memory_order_relaxed);
	if (!session)
		return 0;
	*t = shim_thread__self();
	if (!*t)
		return 0;
	if (atomic_load_explicit(&names_owed, memory_order_relaxed) &&
	    atomic_exchange(&names_owed, false))
		send_names(*t, session);
	return session;
}

void shim_nvtx__push_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, int level,
			  uint32_t hot)
{
	struct open_range r = { .ts = shim_now(), .domain = d, .depth = (uint16_t)level };
	struct nvtx_thread *nt;
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);

	if (!session)
		return;
	ev_parse(&r.ev, src);
	shim_thread__lock(t);
	nt = thread_state(t, true);
	if (nt && nt->n < STACK_MAX)
		nt->stack[nt->n++] = r;
	else
		shim_core__add_dropped(1);
	if (hot & SHIM_HOT_SYNC)
		begin_record(t, session, &r, 0);
	shim_thread__unlock(t);
}

void shim_nvtx__pop_slow(nvtxDomainHandle_t d, int level, uint32_t hot)
{
	uint64_t now = shim_now();
	struct nvtx_thread *nt;
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);
	uint32_t i, me;

	if (!session)
		return;
	shim_thread__lock(t);
	me = shim_thread__tid(t);
	nt = thread_state(t, false);
	/* Ranges pushed before recording started have no entry: nothing to write. */
	for (i = nt ? nt->n : 0; i-- > 0;) {
		if (nt->stack[i].domain != d || nt->stack[i].depth != level)
			continue;
		range_record(t, session, &nt->stack[i], me, me, now, 0, BS_NVTX_PUSHPOP);
		memmove(&nt->stack[i], &nt->stack[i + 1], (nt->n - i - 1) * sizeof(nt->stack[0]));
		nt->n--;
		if (hot & SHIM_HOT_SYNC)
			shim_thread__flush(t);
		break;
	}
	shim_thread__unlock(t);
}

void shim_nvtx__start_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, uint64_t id,
			   uint32_t hot)
{
	uint64_t now = shim_now();
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);
	struct started *s;

	if (!session)
		return;
	s = calloc(1, sizeof(*s));
	if (!s) {
		shim_core__add_dropped(1);
		return;
	}
	s->id = id;
	s->tid = shim_thread__tid(t);
	s->epoch = atomic_load_explicit(&epoch, memory_order_relaxed);
	s->r.ts = now;
	s->r.domain = d;
	ev_parse(&s->r.ev, src);
	if (hot & SHIM_HOT_SYNC) {
		shim_thread__lock(t);
		begin_record(t, session, &s->r, id);
		shim_thread__unlock(t);
	}
	pthread_mutex_lock(&shim_nvtx_lock);
	if (nstarted < RANGES_MAX) {
		s->next = started[id % RANGE_BUCKETS];
		started[id % RANGE_BUCKETS] = s;
		nstarted++;
		s = NULL;
	}
	pthread_mutex_unlock(&shim_nvtx_lock);
	if (s) {
		shim_core__add_dropped(1);
		free(s);
	}
}

/* The started range ID, unlinked (lock held); NULL if not recorded. */
static struct started *take_started(uint64_t id)
{
	struct started **p, *s;

	for (p = &started[id % RANGE_BUCKETS]; (s = *p); p = &s->next) {
		if (s->id == id) {
			*p = s->next;
			nstarted--;
			return s;
		}
	}
	return NULL;
}

void shim_nvtx__end_slow(uint64_t id, uint32_t hot)
{
	uint64_t now = shim_now();
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);
	struct started *s;

	if (!session)
		return;
	pthread_mutex_lock(&shim_nvtx_lock);
	s = take_started(id);
	pthread_mutex_unlock(&shim_nvtx_lock);
	if (!s)
		return;
	if (s->epoch == atomic_load_explicit(&epoch, memory_order_relaxed)) {
		shim_thread__lock(t);
		range_record(t, session, &s->r, s->tid, shim_thread__tid(t), now, id, 0);
		if (hot & SHIM_HOT_SYNC)
			shim_thread__flush(t);
		shim_thread__unlock(t);
	}
	free(s);
}

void shim_nvtx__mark_slow(nvtxDomainHandle_t d, const struct shim_nvtx_src *src, uint32_t hot)
{
	uint64_t now = shim_now();
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);
	struct bs_nvtx_mark rec;
	struct ev e;
	uint32_t me;

	if (!session)
		return;
	ev_parse(&e, src);
	memset(&rec, 0, sizeof(rec));
	shim_thread__lock(t);
	me = shim_thread__tid(t);
	shim_hdr(&rec.h, BS_REC_NVTX_MARK, sizeof(rec), me, now);
	rec.payload = e.payload;
	rec.name_id = shim_str__use(e.name, session, me);
	rec.domain_id = shim_str__use(domain_name(d), session, me);
	rec.category = e.category;
	rec.color = e.color;
	rec.flags = e.flags;
	shim_thread__append(t, session, &rec, sizeof(rec));
	shim_thread__unlock(t);
}

static void name_record(struct shim_thread *t, uint32_t session, const struct name_entry *n)
{
	uint32_t me = shim_thread__tid(t);
	struct bs_nvtx_name rec;

	memset(&rec, 0, sizeof(rec));
	shim_hdr(&rec.h, BS_REC_NVTX_NAME, sizeof(rec), n->tid, shim_now());
	rec.key = n->key;
	rec.kind = n->kind;
	rec.name_id = shim_str__use(n->name, session, me);
	rec.domain_id = shim_str__use(domain_name(n->domain), session, me);
	shim_thread__append(t, session, &rec, sizeof(rec));
}

void shim_nvtx__name(uint32_t kind, uint64_t key, nvtxDomainHandle_t d, struct shim_str *text)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);
	struct name_entry *n, copy;
	struct shim_thread *t;
	uint32_t session;

	if (!text)
		return;
	pthread_mutex_lock(&shim_nvtx_lock);
	for (n = names; n; n = n->next)
		if (n->kind == kind && n->key == key && n->domain == d)
			break;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n) {
			n->kind = kind;
			n->key = key;
			n->domain = d;
			n->next = names;
			names = n;
		}
	}
	if (n) {
		n->name = text;
		n->tid = (uint32_t)gettid();
		copy = *n;
	}
	pthread_mutex_unlock(&shim_nvtx_lock);
	if (!n)
		return;
	session = hot ? recording(hot, &t) : 0;
	if (!session)
		return;
	shim_thread__lock(t);
	name_record(t, session, &copy);
	shim_thread__unlock(t);
}

static void send_names(struct shim_thread *t, uint32_t session)
{
	struct name_entry *n;

	pthread_mutex_lock(&shim_nvtx_lock);
	shim_thread__lock(t);
	for (n = names; n; n = n->next)
		name_record(t, session, n);
	shim_thread__unlock(t);
	pthread_mutex_unlock(&shim_nvtx_lock);
}

void shim_nvtx__resend_names(uint32_t session)
{
	struct shim_thread *t = shim_thread__self();

	if (t && !atomic_load(&names_owed))
		send_names(t, session);
}

void shim_nvtx__set_on(bool on)
{
	struct started *s, *next;
	uint32_t i;

	if (on) {
		atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&shim_nvtx_lock);
	for (i = 0; i < RANGE_BUCKETS; i++) {
		for (s = started[i]; s; s = next) {
			next = s->next;
			free(s);
		}
		started[i] = NULL;
	}
	nstarted = 0;
	pthread_mutex_unlock(&shim_nvtx_lock);
}

/* ---- ranges still open when the tracer asks for everything (drain, exit) ---- */

struct open_copy {
	struct open_range r;
	uint64_t range_id;
	uint32_t tid;
	uint16_t flags;
};

struct open_list {
	struct open_copy *v;
	size_t n;
	size_t cap;
	uint32_t epoch;
};

static void open_add(struct open_list *l, const struct open_range *r, uint32_t tid,
		     uint64_t range_id, uint16_t flags)
{
	struct open_copy *v;

	if (l->n == l->cap) {
		v = realloc(l->v, (l->cap ? l->cap * 2 : 64) * sizeof(*v));
		if (!v) {
			shim_core__add_dropped(1);
			return;
		}
		l->v = v;
		l->cap = l->cap ? l->cap * 2 : 64;
	}
	l->v[l->n++] = (struct open_copy){ *r, range_id, tid, flags };
}

static void collect_stack(struct shim_thread *t, void *arg)
{
	struct nvtx_thread *nt = *shim_thread__nvtx(t);
	struct open_list *l = arg;
	uint32_t i;

	if (!nt || nt->epoch != l->epoch)
		return;
	for (i = 0; i < nt->n; i++)
		open_add(l, &nt->stack[i], shim_thread__tid(t), 0, BS_NVTX_PUSHPOP);
}

void shim_nvtx__send_open(uint32_t session, uint64_t now)
{
	struct open_list l = { .epoch = atomic_load(&epoch) };
	struct shim_thread *t = shim_thread__self();
	struct started *s;
	uint32_t i;
	size_t k;

	if (!t || !(shim_core__state() & BS_SHIM_ST_NVTX_ON))
		return;
	shim_buf__for_each(collect_stack, &l)
		;
	pthread_mutex_lock(&shim_nvtx_lock);
	for (i = 0; i < RANGE_BUCKETS; i++)
		for (s = started[i]; s; s = s->next)
			if (s->epoch == l.epoch)
				open_add(&l, &s->r, s->tid, s->id, 0);
	pthread_mutex_unlock(&shim_nvtx_lock);
	shim_thread__lock(t);
	for (k = 0; k < l.n; k++)
		range_record(t, session, &l.v[k].r, l.v[k].tid, 0, now, l.v[k].range_id,
			     l.v[k].flags | BS_NVTX_OPEN);
	shim_thread__unlock(t);
	free(l.v);
}

/* ---- domains and registered strings ---- */

nvtxDomainHandle_t shim_nvtx__domain(struct shim_str *text)
{
	nvtxDomainHandle_t d;

	pthread_mutex_lock(&shim_nvtx_lock);
	for (d = domains; d; d = d->next)
		if (d->name == text)
			break;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (d) {
			d->name = text;
			/* Past the slots, domains share the last: their depths mix. */
			d->slot = ndomains + 1 < SHIM_NVTX_DOMAINS ? ++ndomains
								   : SHIM_NVTX_DOMAINS - 1;
			d->next = domains;
			domains = d;
		}
	}
	pthread_mutex_unlock(&shim_nvtx_lock);
	return d;
}

nvtxStringHandle_t shim_nvtx__register(nvtxDomainHandle_t d, struct shim_str *text)
{
	nvtxStringHandle_t r;

	pthread_mutex_lock(&shim_nvtx_lock);
	for (r = registered; r; r = r->next)
		if (r->domain == d && r->str == text)
			break;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (r) {
			r->domain = d;
			r->str = text;
			r->next = registered;
			registered = r;
		}
	}
	pthread_mutex_unlock(&shim_nvtx_lock);
	return r;
}

void shim_nvtx__atfork_child(void)
{
	uint32_t me = (uint32_t)gettid();
	struct name_entry **p = &names, *n;

	while ((n = *p)) {
		if (n->kind == BS_NVTX_NAME_THREAD) {
			*p = n->next;
			free(n);
			continue;
		}
		n->tid = me;
		p = &n->next;
	}
	atomic_store(&names_owed, names != NULL);
}
