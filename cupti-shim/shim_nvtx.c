// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The NVTX injection: InitializeInjectionNvtx2 fills the CORE and CORE2 callback tables of
 * each NVTX instance (every DSO built with the header-only nvtx3 has its own, and each calls
 * us) with the handlers below.
 *
 * While recording is off a handler keeps the per-thread push depth (so the values it returns
 * follow NVTX: push the new range's 0-based level, pop the level ended, -1 on error), loads
 * one flag, and returns. While on: push/start remember the range, pop/end write a RANGE
 * record, marks and names write theirs; the strings are interned at the call (the caller's
 * text need not live on).
 *
 * Thread and category names are kept even while off (they are given once, usually before a
 * tracer attaches) and sent again at every attach.
 *
 * BPFSIGHT_NVTX_CHAIN=/path/lib.so: that library (e.g. libcupti.so, for CUPTI's own NVTX
 * support) is initialized on the same tables first and each handler then calls what it
 * installed, with its own domain and string handles.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "shim.h"

#define DOMAINS	  64	/* per-thread depth slots; 0: the default domain; the last is shared */
#define STACK_MAX 128	/* recorded push/pop ranges open on one thread */
#define RANGES_MAX 65536 /* recorded start/end ranges open in the process */
#define RANGE_BUCKETS 4096

/* The opaque NVTX handle types are the tool's to define. */
struct nvtxDomainRegistration_st {
	struct nvtxDomainRegistration_st *next;
	struct shim_str *name;
	uint32_t slot;
	nvtxDomainHandle_t chained;
};

struct nvtxStringRegistration_st {
	struct nvtxStringRegistration_st *next;
	nvtxDomainHandle_t domain;
	struct shim_str *str;
	nvtxStringHandle_t chained;
};

/* Where a call's message and attributes come from (parsed only when recording). */
struct src {
	const nvtxEventAttributes_t *attr;
	const char *a;
	const wchar_t *w;
};

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

static __thread int32_t depth[DOMAINS];
static _Atomic uint64_t last_range_id;
static _Atomic uint32_t epoch;

/* Domains, registered strings, names and started ranges (never held with a thread lock). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtxDomainRegistration_st *domains;
static uint32_t ndomains;
static struct nvtxStringRegistration_st *registered;
static struct name_entry *names;
static struct started *started[RANGE_BUCKETS];
static uint32_t nstarted;

static NvtxFunctionPointer chain_core[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer chain_core2[NVTX_CBID_CORE2_SIZE];
#define CORE_FN(name)                                                                  \
	((nvtx##name##_impl_fntype)__atomic_load_n(&chain_core[NVTX_CBID_CORE_##name], \
						   __ATOMIC_RELAXED))
#define CORE2_FN(name)                                                                   \
	((nvtx##name##_impl_fntype)__atomic_load_n(&chain_core2[NVTX_CBID_CORE2_##name], \
						   __ATOMIC_RELAXED))

static uint32_t slot_of(nvtxDomainHandle_t d)
{
	return d ? d->slot : 0;
}

static struct shim_str *domain_name(nvtxDomainHandle_t d)
{
	return d ? d->name : NULL;
}

#define ATTR_MIN_SIZE (offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t))

static bool attr_ok(const nvtxEventAttributes_t *a)
{
	return a && a->size >= ATTR_MIN_SIZE;
}

static void ev_parse(struct ev *e, const struct src *src)
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
	if (!attr_ok(a))
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
	return *t ? session : 0;
}

static void push_slow(nvtxDomainHandle_t d, const struct src *src, int level, uint32_t hot)
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

static int push(nvtxDomainHandle_t d, const struct src *src)
{
	int level = depth[slot_of(d)]++;
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);

	if (hot)
		push_slow(d, src, level, hot);
	return level;
}

static void pop_slow(nvtxDomainHandle_t d, int level, uint32_t hot)
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

static int pop(nvtxDomainHandle_t d)
{
	uint32_t slot = slot_of(d);
	uint32_t hot;
	int level;

	if (depth[slot] <= 0)
		return -1; /* a pop without a push */
	level = --depth[slot];
	hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);
	if (hot)
		pop_slow(d, level, hot);
	return level;
}

static void start_slow(nvtxDomainHandle_t d, const struct src *src, uint64_t id, uint32_t hot)
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
	pthread_mutex_lock(&lock);
	if (nstarted < RANGES_MAX) {
		s->next = started[id % RANGE_BUCKETS];
		started[id % RANGE_BUCKETS] = s;
		nstarted++;
		s = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (s) {
		shim_core__add_dropped(1);
		free(s);
	}
}

/*
 * CHAINED_ID: the id the chained library gave the range (0: none). Its ids then become
 * ours, so that the end call, which carries one id, can go to both of us.
 */
static nvtxRangeId_t start(nvtxDomainHandle_t d, const struct src *src, uint64_t chained_id)
{
	uint64_t id = chained_id;
	uint32_t hot;

	if (!id)
		id = atomic_fetch_add_explicit(&last_range_id, 1, memory_order_relaxed) + 1;
	hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);
	if (hot)
		start_slow(d, src, id, hot);
	return id;
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

static void end_slow(uint64_t id, uint32_t hot)
{
	uint64_t now = shim_now();
	struct shim_thread *t;
	uint32_t session = recording(hot, &t);
	struct started *s;

	if (!session)
		return;
	pthread_mutex_lock(&lock);
	s = take_started(id);
	pthread_mutex_unlock(&lock);
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

static void end(uint64_t id)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);

	if (hot)
		end_slow(id, hot);
}

static void mark_slow(nvtxDomainHandle_t d, const struct src *src, uint32_t hot)
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

static void mark(nvtxDomainHandle_t d, const struct src *src)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);

	if (hot)
		mark_slow(d, src, hot);
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

/* Names are kept whatever the state (see the top), and written now when recording. */
static void name(uint32_t kind, uint64_t key, nvtxDomainHandle_t d, struct shim_str *text)
{
	uint32_t hot = atomic_load_explicit(&shim_hot, memory_order_relaxed);
	struct name_entry *n, copy;
	struct shim_thread *t;
	uint32_t session;

	if (!text)
		return;
	pthread_mutex_lock(&lock);
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
	pthread_mutex_unlock(&lock);
	if (!n)
		return;
	session = hot ? recording(hot, &t) : 0;
	if (!session)
		return;
	shim_thread__lock(t);
	name_record(t, session, &copy);
	shim_thread__unlock(t);
}

void shim_nvtx__resend_names(uint32_t session)
{
	struct shim_thread *t = shim_thread__self();
	struct name_entry *n;

	if (!t)
		return;
	pthread_mutex_lock(&lock);
	shim_thread__lock(t);
	for (n = names; n; n = n->next)
		name_record(t, session, n);
	shim_thread__unlock(t);
	pthread_mutex_unlock(&lock);
}

void shim_nvtx__set_on(bool on)
{
	struct started *s, *next;
	uint32_t i;

	if (on) {
		atomic_fetch_add_explicit(&epoch, 1, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&lock);
	for (i = 0; i < RANGE_BUCKETS; i++) {
		for (s = started[i]; s; s = next) {
			next = s->next;
			free(s);
		}
		started[i] = NULL;
	}
	nstarted = 0;
	pthread_mutex_unlock(&lock);
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
	shim_buf__for_each(collect_stack, &l);
	pthread_mutex_lock(&lock);
	for (i = 0; i < RANGE_BUCKETS; i++)
		for (s = started[i]; s; s = s->next)
			if (s->epoch == l.epoch)
				open_add(&l, &s->r, s->tid, s->id, 0);
	pthread_mutex_unlock(&lock);
	shim_thread__lock(t);
	for (k = 0; k < l.n; k++)
		range_record(t, session, &l.v[k].r, l.v[k].tid, 0, now, l.v[k].range_id,
			     l.v[k].flags | BS_NVTX_OPEN);
	shim_thread__unlock(t);
	free(l.v);
}

/* ---- domains and registered strings ---- */

static nvtxDomainHandle_t domain_create(struct shim_str *text)
{
	nvtxDomainHandle_t d;

	pthread_mutex_lock(&lock);
	for (d = domains; d; d = d->next)
		if (d->name == text)
			break;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (d) {
			d->name = text;
			d->slot = ndomains + 1 < DOMAINS ? ++ndomains : DOMAINS - 1;
			d->next = domains;
			domains = d;
		}
	}
	pthread_mutex_unlock(&lock);
	return d;
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, struct shim_str *text)
{
	nvtxStringHandle_t r;

	pthread_mutex_lock(&lock);
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
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- chaining ---- */

static nvtxDomainHandle_t chained_domain(nvtxDomainHandle_t d)
{
	return d ? d->chained : NULL;
}

/* Attributes for the chained library: its own handle for a registered message. */
static const nvtxEventAttributes_t *chained_attr(const nvtxEventAttributes_t *a,
						 nvtxEventAttributes_t *tmp)
{
	if (!attr_ok(a) || a->messageType != NVTX_MESSAGE_TYPE_REGISTERED || !a->message.registered)
		return a;
	memset(tmp, 0, sizeof(*tmp));
	memcpy(tmp, a, a->size < sizeof(*tmp) ? a->size : sizeof(*tmp));
	tmp->message.registered = a->message.registered->chained;
	return tmp;
}

/* ---- the handlers ---- */

static void NVTX_API h_MarkEx(const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxMarkEx_impl_fntype f = CORE_FN(MarkEx);
	nvtxEventAttributes_t tmp;

	mark(NULL, &s);
	if (f)
		f(chained_attr(a, &tmp));
}

static void NVTX_API h_MarkA(const char *msg)
{
	struct src s = { .a = msg };
	nvtxMarkA_impl_fntype f = CORE_FN(MarkA);

	mark(NULL, &s);
	if (f)
		f(msg);
}

static void NVTX_API h_MarkW(const wchar_t *msg)
{
	struct src s = { .w = msg };
	nvtxMarkW_impl_fntype f = CORE_FN(MarkW);

	mark(NULL, &s);
	if (f)
		f(msg);
}

static nvtxRangeId_t NVTX_API h_RangeStartEx(const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxRangeStartEx_impl_fntype f = CORE_FN(RangeStartEx);
	nvtxEventAttributes_t tmp;

	return start(NULL, &s, f ? f(chained_attr(a, &tmp)) : 0);
}

static nvtxRangeId_t NVTX_API h_RangeStartA(const char *msg)
{
	struct src s = { .a = msg };
	nvtxRangeStartA_impl_fntype f = CORE_FN(RangeStartA);

	return start(NULL, &s, f ? f(msg) : 0);
}

static nvtxRangeId_t NVTX_API h_RangeStartW(const wchar_t *msg)
{
	struct src s = { .w = msg };
	nvtxRangeStartW_impl_fntype f = CORE_FN(RangeStartW);

	return start(NULL, &s, f ? f(msg) : 0);
}

static void NVTX_API h_RangeEnd(nvtxRangeId_t id)
{
	nvtxRangeEnd_impl_fntype f = CORE_FN(RangeEnd);

	end(id);
	if (f)
		f(id);
}

static int NVTX_API h_RangePushEx(const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxRangePushEx_impl_fntype f = CORE_FN(RangePushEx);
	nvtxEventAttributes_t tmp;

	if (f)
		f(chained_attr(a, &tmp));
	return push(NULL, &s);
}

static int NVTX_API h_RangePushA(const char *msg)
{
	struct src s = { .a = msg };
	nvtxRangePushA_impl_fntype f = CORE_FN(RangePushA);

	if (f)
		f(msg);
	return push(NULL, &s);
}

static int NVTX_API h_RangePushW(const wchar_t *msg)
{
	struct src s = { .w = msg };
	nvtxRangePushW_impl_fntype f = CORE_FN(RangePushW);

	if (f)
		f(msg);
	return push(NULL, &s);
}

static int NVTX_API h_RangePop(void)
{
	nvtxRangePop_impl_fntype f = CORE_FN(RangePop);
	int level = pop(NULL);

	if (f)
		f();
	return level;
}

static void NVTX_API h_NameCategoryA(uint32_t cat, const char *text)
{
	nvtxNameCategoryA_impl_fntype f = CORE_FN(NameCategoryA);

	name(BS_NVTX_NAME_CATEGORY, cat, NULL, shim_str__intern_c(text));
	if (f)
		f(cat, text);
}

static void NVTX_API h_NameCategoryW(uint32_t cat, const wchar_t *text)
{
	nvtxNameCategoryW_impl_fntype f = CORE_FN(NameCategoryW);

	name(BS_NVTX_NAME_CATEGORY, cat, NULL, shim_str__intern_wide(text));
	if (f)
		f(cat, text);
}

static void NVTX_API h_NameOsThreadA(uint32_t tid, const char *text)
{
	nvtxNameOsThreadA_impl_fntype f = CORE_FN(NameOsThreadA);

	name(BS_NVTX_NAME_THREAD, tid, NULL, shim_str__intern_c(text));
	if (f)
		f(tid, text);
}

static void NVTX_API h_NameOsThreadW(uint32_t tid, const wchar_t *text)
{
	nvtxNameOsThreadW_impl_fntype f = CORE_FN(NameOsThreadW);

	name(BS_NVTX_NAME_THREAD, tid, NULL, shim_str__intern_wide(text));
	if (f)
		f(tid, text);
}

static void NVTX_API h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxDomainMarkEx_impl_fntype f = CORE2_FN(DomainMarkEx);
	nvtxEventAttributes_t tmp;

	mark(d, &s);
	if (f)
		f(chained_domain(d), chained_attr(a, &tmp));
}

static nvtxRangeId_t NVTX_API h_DomainRangeStartEx(nvtxDomainHandle_t d,
						   const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxDomainRangeStartEx_impl_fntype f = CORE2_FN(DomainRangeStartEx);
	nvtxEventAttributes_t tmp;

	return start(d, &s, f ? f(chained_domain(d), chained_attr(a, &tmp)) : 0);
}

static void NVTX_API h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	nvtxDomainRangeEnd_impl_fntype f = CORE2_FN(DomainRangeEnd);

	end(id);
	if (f)
		f(chained_domain(d), id);
}

static int NVTX_API h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	struct src s = { .attr = a };
	nvtxDomainRangePushEx_impl_fntype f = CORE2_FN(DomainRangePushEx);
	nvtxEventAttributes_t tmp;

	if (f)
		f(chained_domain(d), chained_attr(a, &tmp));
	return push(d, &s);
}

static int NVTX_API h_DomainRangePop(nvtxDomainHandle_t d)
{
	nvtxDomainRangePop_impl_fntype f = CORE2_FN(DomainRangePop);
	int level = pop(d);

	if (f)
		f(chained_domain(d));
	return level;
}

static void NVTX_API h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char *text)
{
	nvtxDomainNameCategoryA_impl_fntype f = CORE2_FN(DomainNameCategoryA);

	name(BS_NVTX_NAME_CATEGORY, cat, d, shim_str__intern_c(text));
	if (f)
		f(chained_domain(d), cat, text);
}

static void NVTX_API h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat,
					  const wchar_t *text)
{
	nvtxDomainNameCategoryW_impl_fntype f = CORE2_FN(DomainNameCategoryW);

	name(BS_NVTX_NAME_CATEGORY, cat, d, shim_str__intern_wide(text));
	if (f)
		f(chained_domain(d), cat, text);
}

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringA(nvtxDomainHandle_t d,
							    const char *text)
{
	nvtxDomainRegisterStringA_impl_fntype f = CORE2_FN(DomainRegisterStringA);
	nvtxStringHandle_t r = register_string(d, shim_str__intern_c(text));

	if (r && f && !r->chained)
		r->chained = f(chained_domain(d), text);
	return r;
}

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringW(nvtxDomainHandle_t d,
							    const wchar_t *text)
{
	nvtxDomainRegisterStringW_impl_fntype f = CORE2_FN(DomainRegisterStringW);
	nvtxStringHandle_t r = register_string(d, shim_str__intern_wide(text));

	if (r && f && !r->chained)
		r->chained = f(chained_domain(d), text);
	return r;
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateA(const char *text)
{
	nvtxDomainCreateA_impl_fntype f = CORE2_FN(DomainCreateA);
	nvtxDomainHandle_t d = domain_create(shim_str__intern_c(text));

	if (d && f && !d->chained)
		d->chained = f(text);
	return d;
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateW(const wchar_t *text)
{
	nvtxDomainCreateW_impl_fntype f = CORE2_FN(DomainCreateW);
	nvtxDomainHandle_t d = domain_create(shim_str__intern_wide(text));

	if (d && f && !d->chained)
		d->chained = f(text);
	return d;
}

/* Domains live as long as the process: a handle used after its destroy stays harmless. */
static void NVTX_API h_DomainDestroy(nvtxDomainHandle_t d)
{
	nvtxDomainDestroy_impl_fntype f = CORE2_FN(DomainDestroy);

	if (f && d && d->chained) {
		f(d->chained);
		d->chained = NULL;
	}
}

static void NVTX_API h_Initialize(const void *reserved)
{
	nvtxInitialize_impl_fntype f = CORE2_FN(Initialize);

	if (f)
		f(reserved);
}

#define H(mod, name) [NVTX_CBID_##mod##_##name] = (NvtxFunctionPointer)h_##name

static const NvtxFunctionPointer core_handlers[NVTX_CBID_CORE_SIZE] = {
	H(CORE, MarkEx),	H(CORE, MarkA),		H(CORE, MarkW),
	H(CORE, RangeStartEx),	H(CORE, RangeStartA),	H(CORE, RangeStartW),
	H(CORE, RangeEnd),	H(CORE, RangePushEx),	H(CORE, RangePushA),
	H(CORE, RangePushW),	H(CORE, RangePop),	H(CORE, NameCategoryA),
	H(CORE, NameCategoryW), H(CORE, NameOsThreadA), H(CORE, NameOsThreadW),
};

static const NvtxFunctionPointer core2_handlers[NVTX_CBID_CORE2_SIZE] = {
	H(CORE2, DomainMarkEx),		 H(CORE2, DomainRangeStartEx),
	H(CORE2, DomainRangeEnd),	 H(CORE2, DomainRangePushEx),
	H(CORE2, DomainRangePop),	 H(CORE2, DomainNameCategoryA),
	H(CORE2, DomainNameCategoryW),	 H(CORE2, DomainRegisterStringA),
	H(CORE2, DomainRegisterStringW), H(CORE2, DomainCreateA),
	H(CORE2, DomainCreateW),	 H(CORE2, DomainDestroy),
	H(CORE2, Initialize),
};

#define TABLE_MAX ((int)NVTX_CBID_CORE_SIZE > (int)NVTX_CBID_CORE2_SIZE ? \
		   (int)NVTX_CBID_CORE_SIZE : (int)NVTX_CBID_CORE2_SIZE)

/* One NVTX module table of an instance: NTAB slots (pointers to its function pointers). */
struct table {
	NvtxFunctionTable slots;
	unsigned int n;
	unsigned int size; /* the module's callback-id count in our headers */
	NvtxFunctionPointer *chain;
	const NvtxFunctionPointer *ours;
};

static NvtxFunctionPointer slot_get(const struct table *tb, unsigned int i)
{
	return i < tb->n && tb->slots[i] ? *tb->slots[i] : NULL;
}

/* Let the chained library fill the instance's tables first, and keep what it installed. */
static void chain_instance(NvtxGetExportTableFunc_t get, struct table *tabs, int ntabs)
{
	static NvtxInitializeInjectionNvtxFunc_t init;
	static bool tried;
	NvtxFunctionPointer before[2][TABLE_MAX];
	const char *path = getenv("BPFSIGHT_NVTX_CHAIN");
	NvtxFunctionPointer now;
	unsigned int i;
	void *lib;
	int k;

	if (!path || !*path)
		return;
	pthread_mutex_lock(&lock);
	if (!tried) {
		tried = true;
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (lib)
			*(void **)&init = dlsym(lib, "InitializeInjectionNvtx2");
		if (!init)
			shim_log("BPFSIGHT_NVTX_CHAIN=%s: %s", path,
				 lib ? "no InitializeInjectionNvtx2" : dlerror());
	}
	pthread_mutex_unlock(&lock);
	if (!init)
		return;
	for (k = 0; k < ntabs; k++)
		for (i = 0; i < tabs[k].size; i++)
			before[k][i] = slot_get(&tabs[k], i);
	if (!init(get)) {
		shim_log("BPFSIGHT_NVTX_CHAIN=%s: its initialization failed", path);
		return;
	}
	/* What changed is the chained library's; the first instance's pointers are kept. */
	for (k = 0; k < ntabs; k++) {
		for (i = 1; i < tabs[k].size; i++) {
			now = slot_get(&tabs[k], i);
			if (now && now != before[k][i] &&
			    !__atomic_load_n(&tabs[k].chain[i], __ATOMIC_RELAXED))
				__atomic_store_n(&tabs[k].chain[i], now, __ATOMIC_RELAXED);
		}
	}
	shim_core__set_state(BS_SHIM_ST_NVTX_CHAINED, 0);
}

SHIM_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb;
	struct table tabs[2] = {
		{ .size = NVTX_CBID_CORE_SIZE, .chain = chain_core, .ours = core_handlers },
		{ .size = NVTX_CBID_CORE2_SIZE, .chain = chain_core2, .ours = core2_handlers },
	};
	unsigned int i;
	int k;

	shim_core__enter(BS_SHIM_ST_NVTX_INJECTED);
	cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &tabs[0].slots, &tabs[0].n) ||
	    !tabs[0].slots)
		return 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &tabs[1].slots, &tabs[1].n))
		tabs[1].slots = NULL;
	if (!tabs[1].slots)
		tabs[1].n = 0;
	chain_instance(get, tabs, 2);
	for (k = 0; k < 2; k++)
		for (i = 1; i < tabs[k].size && i < tabs[k].n; i++)
			if (tabs[k].slots[i] && tabs[k].ours[i])
				*tabs[k].slots[i] = tabs[k].ours[i];
	shim_log("NVTX instance %p initialized", (void *)get);
	return 1;
}

void shim_nvtx__atfork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

void shim_nvtx__atfork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

void shim_nvtx__atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}
