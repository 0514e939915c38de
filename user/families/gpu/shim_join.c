// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The launch join: GPU records -> the CPU call that launched them (see shim_join.h). This
 * file keeps the calls and decides the API records; shim_join_gpu.c the GPU records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "shim_join_int.h"
#include "hmap.h"

static const char *const why_names[JOIN_WHY_MAX] = {
	[JOIN_WHY_NO_API] = "no_api_record",	  [JOIN_WHY_NO_CUDA] = "cuda_not_traced",
	[JOIN_WHY_THREAD] = "thread_not_traced",  [JOIN_WHY_OUTSIDE] = "outside_calls",
	[JOIN_WHY_NOT_SEEN] = "call_not_seen",	  [JOIN_WHY_EXPIRED] = "calls_expired",
	[JOIN_WHY_NO_ORDER] = "no_call_in_order", [JOIN_WHY_GRAPH] = "graph_node_no_api",
};

const char *join_why__name(unsigned int why)
{
	return why < JOIN_WHY_MAX ? why_names[why] : "?";
}

struct shim_join *shim_join__new(void (*emit)(void *arg, struct bs_hdr *rec), void *arg)
{
	struct shim_join *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->emit = emit;
	j->arg = arg;
	j->procs = hmap__new(sizeof(struct jproc *));
	/* Large but lazily touched: calloc's pages are mapped as the rings fill. */
	j->pend = calloc(JOIN_PENDING, sizeof(*j->pend));
	j->held = calloc(JOIN_HELD, sizeof(*j->held));
	j->order = order_link__new(join_order_decided, j);
	if (!j->procs || !j->pend || !j->held || !j->order) {
		shim_join__free(j);
		return NULL;
	}
	/* Only calls that launch work can contain an API record: the history keeps no other. */
	for (__u32 fn = 0; fn < cuda_table.napis && fn < sizeof(j->launches); fn++) {
		__u16 g = cuda_table.apis[fn].group;

		j->launches[fn] = g == CUDA_GRP_LAUNCH || g == CUDA_GRP_GRAPH ||
				  g == CUDA_GRP_MEMCPY || g == CUDA_GRP_MEMSET;
	}
	return j;
}

static void proc_free(struct shim_join *j, struct jproc *p)
{
	size_t it = 0;
	struct jthread *t;

	if (!p)
		return;
	while (p->threads && (t = hmap__next(p->threads, &it, NULL))) {
		j->ncalls -= t->n;
		jthread__free(t);
	}
	hmap__free(p->threads);
	free(p->slots);
	free(p);
}

void shim_join__free(struct shim_join *j)
{
	size_t it = 0;
	struct jproc **pp;

	if (!j)
		return;
	while (j->procs && (pp = hmap__next(j->procs, &it, NULL)))
		proc_free(j, *pp);
	hmap__free(j->procs);
	order_link__free(j->order);
	free(j->pend);
	free(j->held);
	free(j);
}

struct jproc *join_proc(struct shim_join *j, __u32 pid, int create)
{
	struct jproc **pp = hmap__get(j->procs, (struct hkey){ pid, 0 }, 0), *p;

	if (pp || !create)
		return pp ? *pp : NULL;
	p = calloc(1, sizeof(*p));
	if (p && !(p->threads = hmap__new(sizeof(struct jthread)))) {
		free(p);
		p = NULL;
	}
	pp = p ? hmap__get(j->procs, (struct hkey){ pid, 0 }, 1) : NULL;
	if (!pp) {
		proc_free(j, p);
		return NULL;
	}
	*pp = p;
	return p;
}

struct corr_slot *join_slot(struct shim_join *j, __u32 pid, __u32 corr)
{
	struct jproc *p = join_proc(j, pid, 1);

	if (!p)
		return NULL;
	if (!p->slots && !(p->slots = calloc(JOIN_CORR_SLOTS, sizeof(*p->slots))))
		return NULL;
	return &p->slots[corr % JOIN_CORR_SLOTS];
}

/* Keep the total under JOIN_MAX_CALLS: the thread adding one forgets its own oldest. */
static int make_room(struct shim_join *j, struct jthread *t)
{
	if (j->ncalls < JOIN_MAX_CALLS)
		return 0;
	if (!jthread__pop(t))
		return -ENOSPC;
	j->ncalls--;
	j->st.calls_dropped++;
	return 0;
}

void shim_join__order_always(struct shim_join *j)
{
	if (j)
		j->order_always = 1;
}

void shim_join__no_calls(struct shim_join *j)
{
	if (j)
		j->no_calls = 1;
}

static void held_retry_thread(struct shim_join *j, __u32 pid, __u32 tid);

void shim_join__cuda_call(struct shim_join *j, const struct bs_hdr *rec)
{
	const struct bs_ucall *c = (const void *)rec;
	struct jthread *t;
	struct jproc *p;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*c))
		return;
	p = join_proc(j, rec->pid, 1);
	if (!p)
		return;
	if (j->order_always || !p->apis)
		order_link__call(j->order, rec);
	p->calls++;
	t = hmap__get(p->threads, (struct hkey){ rec->tid, 0 }, 1);
	if (!t)
		return;
	if (!c->depth && rec->ts + c->dur > t->settled)
		t->settled = rec->ts + c->dur;
	if (c->fn >= sizeof(j->launches) || !j->launches[c->fn]) {
		if (!c->depth && t->nheld)
			held_retry_thread(j, rec->pid, rec->tid);
		return;
	}
	/* The thread's own clock: what ended JOIN_KEEP_NS before this call began goes. */
	if (rec->ts > JOIN_KEEP_NS)
		j->ncalls -= jthread__trim(t, rec->ts - JOIN_KEEP_NS);
	if (make_room(j, t)) {
		j->st.calls_dropped++;
		if (rec->ts + c->dur > t->forgot_end)
			t->forgot_end = rec->ts + c->dur;
		return;
	}
	if (!jthread__add(t, rec->ts, c->dur, c->depth))
		j->ncalls++;
	/* An outer call returns last: waiting API records of the thread are decided by it. */
	if (!c->depth && t->nheld)
		held_retry_thread(j, rec->pid, rec->tid);
}

/*
 * Try to decide API record R: 1 and its link (or JOIN_WHY_* in *WHY) when final, 0 while its
 * call may still come. FINAL: decide now whatever comes later.
 */
static int decide(struct shim_join *j, const struct bs_gpu_api *r, __u64 *call, __u8 *why,
		  int final)
{
	struct jproc *p = join_proc(j, r->h.pid, 0);
	struct jthread *t = p ? hmap__get(p->threads, (struct hkey){ r->h.tid, 0 }, 0) : NULL;

	*call = t ? jthread__find(t, r->h.ts, r->h.ts + r->dur) : 0;
	if (*call)
		return 1;
	if (t && r->h.ts <= t->forgot_end)
		*why = JOIN_WHY_EXPIRED;
	else if (t && t->settled >= r->h.ts)
		*why = JOIN_WHY_OUTSIDE; /* every call that could contain it has come */
	else if (!final)
		return 0;
	else if (!p || !p->calls)
		*why = JOIN_WHY_NO_CUDA;
	else if (!t || !t->appended)
		*why = t && t->settled ? JOIN_WHY_OUTSIDE : JOIN_WHY_THREAD;
	else
		*why = JOIN_WHY_NOT_SEEN;
	return 1;
}

/* R is decided: fill it, emit it, fill its slot and release the GPU records waiting there. */
static void settle(struct shim_join *j, struct bs_gpu_api *r, __u64 call, __u8 why)
{
	struct corr_slot *s;

	if (call) {
		r->call_ts = call;
		r->flags = (r->flags & ~BS_GPU_CALL_API) | BS_GPU_CALL_CUDA;
	}
	j->emit(j->arg, &r->h);
	s = join_slot(j, r->h.pid, r->correlation);
	if (!s)
		return;
	if (call)
		join_order_check(j, s, r->correlation, r->h.tid, call);
	/* Another id's chain (one JOIN_CORR_SLOTS apart) is walked too: its records stay. */
	*s = (struct corr_slot){ .corr = r->correlation,
				 .tid = r->h.tid,
				 .call_ts = call ? call : r->h.ts,
				 .flags = call ? BS_GPU_CALL_CUDA : BS_GPU_CALL_API,
				 .why = why,
				 .pend = s->pend };
	join_release_chain(j, r->h.pid, s);
}

static void held_pop(struct shim_join *j)
{
	j->held[j->hhead].live = 0;
	j->hhead = (j->hhead + 1) % JOIN_HELD;
	j->hcount--;
}

static struct jthread *thread_of(struct shim_join *j, __u32 pid, __u32 tid)
{
	struct jproc *p = join_proc(j, pid, 0);

	return p ? hmap__get(p->threads, (struct hkey){ tid, 0 }, 0) : NULL;
}

/* Decide H now or when FINAL; 1 when it was. */
static int held_try(struct shim_join *j, struct held *h, int final)
{
	struct bs_gpu_api *r = (void *)h->rec;
	struct jthread *t;
	__u64 call;
	__u8 why = 0;

	if (!decide(j, r, &call, &why, final))
		return 0;
	h->live = 0;
	t = h->counted ? thread_of(j, r->h.pid, r->h.tid) : NULL;
	if (t && t->nheld)
		t->nheld--;
	settle(j, r, call, why);
	return 1;
}

void shim_join__api(struct shim_join *j, struct bs_gpu_api *r, __u64 now)
{
	struct jproc *p;
	struct jthread *t;
	struct held *h;
	__u64 call;
	__u8 why = 0;

	p = join_proc(j, r->h.pid, 1);
	if (p)
		p->apis++;
	if (r->flags & BS_GPU_CALL_CUDA) {
		settle(j, r, r->call_ts, 0); /* a file's link, kept */
		return;
	}
	if (decide(j, r, &call, &why, j->no_calls || r->h.size > HELD_REC)) {
		settle(j, r, call, why);
		return;
	}
	if (j->hcount == JOIN_HELD) {
		held_try(j, &j->held[j->hhead], 1); /* full: the oldest is decided as it stands */
		held_pop(j);
	}
	h = &j->held[(j->hhead + j->hcount++) % JOIN_HELD];
	*h = (struct held){ .since = now, .live = 1 };
	memcpy(h->rec, r, r->h.size);
	t = thread_of(j, r->h.pid, r->h.tid);
	if (t) {
		t->nheld++;
		h->counted = 1;
	}
}

/* A depth-0 call of (PID, TID) came: retry the thread's waiting API records. */
static void held_retry_thread(struct shim_join *j, __u32 pid, __u32 tid)
{
	for (__u32 i = 0; i < j->hcount; i++) {
		struct held *h = &j->held[(j->hhead + i) % JOIN_HELD];

		if (h->live && ((struct bs_hdr *)h->rec)->pid == pid &&
		    ((struct bs_hdr *)h->rec)->tid == tid)
			held_try(j, h, 0);
	}
}

/* Retry the waiting API records whose thread gained calls; decide those that waited enough. */
static void held_expire(struct shim_join *j, __u64 now, int all)
{
	for (__u32 i = 0; i < j->hcount; i++) {
		struct held *h = &j->held[(j->hhead + i) % JOIN_HELD];
		struct bs_gpu_api *r = (void *)h->rec;
		struct jthread *t;

		if (!h->live)
			continue;
		if (all || h->since + JOIN_WAIT_NS <= now) {
			held_try(j, h, 1);
			continue;
		}
		t = thread_of(j, r->h.pid, r->h.tid);
		if (!t || t->appended + t->settled == h->tried)
			continue;
		h->tried = t->appended + t->settled;
		held_try(j, h, 0);
	}
	while (j->hcount && !j->held[j->hhead].live)
		held_pop(j);
}

/* Forget the calls of every thread that ended JOIN_KEEP_NS ago, and the threads left empty. */
static void sweep(struct shim_join *j, __u64 now)
{
	size_t pit = 0;
	struct jproc **pp;

	while ((pp = hmap__next(j->procs, &pit, NULL))) {
		size_t it = 0;
		struct jthread *t;

		while ((t = hmap__next((*pp)->threads, &it, NULL)))
			j->ncalls -= jthread__trim(t, now - JOIN_KEEP_NS);
	}
}

void shim_join__expire(struct shim_join *j, __u64 now, int all)
{
	order_link__run(j->order, now, all); /* before the ops waiting for it give up */
	held_expire(j, now, all);
	join_pending_expire(j, now, all);
	if (now > j->last_sweep + JOIN_KEEP_NS) {
		if (j->last_sweep)
			sweep(j, now);
		j->last_sweep = now;
	}
}

void shim_join__proc_exit(struct shim_join *j, __u32 pid)
{
	struct jproc *p;

	if (!j)
		return;
	order_link__proc_exit(j->order, pid);
	for (__u32 i = 0; i < j->hcount; i++) {
		struct held *h = &j->held[(j->hhead + i) % JOIN_HELD];

		if (h->live && ((struct bs_hdr *)h->rec)->pid == pid)
			held_try(j, h, 1);
	}
	join_pending_drop_pid(j, pid);
	p = join_proc(j, pid, 0);
	if (p) {
		proc_free(j, p);
		hmap__del(j->procs, (struct hkey){ pid, 0 });
	}
}

void shim_join__stats(const struct shim_join *j, struct shim_join_stats *s)
{
	struct order_link_stats os;

	*s = j->st;
	order_link__stats(j->order, &os);
	s->order_linked = os.linked;
	s->order_unlinked = os.unlinked;
	s->order_dropped = os.calls_dropped + os.ops_dropped;
}

int shim_join_stats__why(const struct shim_join_stats *s, char *buf, size_t len)
{
	size_t off = 0;
	int n = 0;

	if (len)
		buf[0] = 0;
	for (unsigned int i = 0; i < JOIN_WHY_MAX; i++) {
		if (!s->why[i] || off >= len)
			continue;
		off += snprintf(buf + off, len - off, "%s%s: %llu", n++ ? ", " : "", why_names[i],
				(unsigned long long)s->why[i]);
	}
	return n;
}
