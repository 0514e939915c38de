// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The launch join: GPU records -> the CPU call that launched them (see shim_join.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "shim_join.h"
#include "stats_math.h"

/* A thread's last launching calls, oldest first from (n - JOIN_HIST). */
struct hist {
	__u64 n; /* calls appended so far; call k is at k % JOIN_HIST */
	__u64 ts[JOIN_HIST];
	__u64 end[JOIN_HIST];
};

struct corr_slot {
	__u32 corr;
	__u32 tid;
	__u64 call_ts;
	__u16 flags; /* BS_GPU_CALL_*: how the API record was linked; 0 = not seen */
	__u16 _pad;
	__u32 pend; /* index + 1 of the newest pending record of this slot, 0 = none */
};

#define PENDING_REC 128 /* the largest GPU record (bs_gpu_kernel: 112) */

struct pending {
	__u64 since; /* queued at (mono ns) */
	__u64 gen;   /* insertion number: chains only go to smaller ones */
	__u32 pid, corr;
	__u32 prev; /* index + 1 of the previous record in its slot's chain */
	__u32 live;
	__u64 rec[PENDING_REC / 8];
};

struct shim_join {
	void (*emit)(void *arg, struct bs_hdr *rec);
	void *arg;
	struct hmap *threads; /* (pid, tid) -> struct hist * */
	struct hmap *corrs;   /* (pid, 0) -> struct corr_slot[JOIN_CORR_SLOTS] */
	struct pending *pend; /* ring of JOIN_PENDING */
	__u32 head, count;
	__u64 gen;
	struct shim_join_stats st;
	__u8 launches[1024]; /* cuda_table fn -> 1 when it puts work on the GPU */
};

struct shim_join *shim_join__new(void (*emit)(void *arg, struct bs_hdr *rec), void *arg)
{
	struct shim_join *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->emit = emit;
	j->arg = arg;
	j->threads = hmap__new(sizeof(struct hist *));
	j->corrs = hmap__new(sizeof(struct corr_slot *));
	j->pend = calloc(JOIN_PENDING, sizeof(*j->pend));
	if (!j->threads || !j->corrs || !j->pend) {
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

static void free_ptrs(struct hmap *m)
{
	size_t it = 0;
	void **v;

	while (m && (v = hmap__next(m, &it, NULL)))
		free(*v);
	hmap__free(m);
}

void shim_join__free(struct shim_join *j)
{
	if (!j)
		return;
	free_ptrs(j->threads);
	free_ptrs(j->corrs);
	free(j->pend);
	free(j);
}

void shim_join__cuda_call(struct shim_join *j, const struct bs_hdr *rec)
{
	const struct bs_ucall *c = (const void *)rec;
	struct hist **h;
	__u64 k;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*c) || c->depth ||
	    c->fn >= sizeof(j->launches) || !j->launches[c->fn])
		return;
	h = hmap__get(j->threads, (struct hkey){ rec->pid, rec->tid }, 0);
	if (!h) {
		if (hmap__count(j->threads) >= JOIN_MAX_THREADS)
			return; /* bounded: this thread's launches link through CUPTI's record */
		h = hmap__get(j->threads, (struct hkey){ rec->pid, rec->tid }, 1);
		if (!h || !(*h = calloc(1, sizeof(**h))))
			return;
	}
	if (!*h)
		return;
	k = (*h)->n++ % JOIN_HIST;
	(*h)->ts[k] = rec->ts;
	(*h)->end[k] = rec->ts + c->dur;
}

static __s64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return (__s64)(hi - lo);
}

/* The start of the call on (PID, TID) containing [t0, t1], or overlapping it most; 0 = none. */
static __u64 find_call(struct shim_join *j, __u32 pid, __u32 tid, __u64 t0, __u64 t1)
{
	struct hist **hp = hmap__get(j->threads, (struct hkey){ pid, tid }, 0), *h;
	__u64 lo, hi, best = 0;
	__s64 best_ov = 0;

	if (!hp || !(h = *hp) || !h->n)
		return 0;
	lo = h->n > JOIN_HIST ? h->n - JOIN_HIST : 0;
	hi = h->n;
	/* The last call starting at or before t0 (calls of a thread are in time order). */
	while (hi - lo > 1) {
		__u64 mid = lo + (hi - lo) / 2;

		if (h->ts[mid % JOIN_HIST] <= t0)
			lo = mid;
		else
			hi = mid;
	}
	for (__u64 k = lo; k < lo + 2 && k < h->n; k++) {
		__u64 i = k % JOIN_HIST;
		__s64 ov = overlap(h->ts[i], h->end[i], t0, t1);

		if (h->ts[i] <= t0 && h->end[i] >= t1)
			return h->ts[i]; /* contains it */
		if (ov > best_ov) {
			best_ov = ov;
			best = h->ts[i];
		}
	}
	return best;
}

static struct corr_slot *slot_of(struct shim_join *j, __u32 pid, __u32 corr, int create)
{
	struct corr_slot **t = hmap__get(j->corrs, (struct hkey){ pid, 0 }, create);

	if (!t)
		return NULL;
	if (!*t && (!create || !(*t = calloc(JOIN_CORR_SLOTS, sizeof(**t)))))
		return NULL;
	return &(*t)[corr % JOIN_CORR_SLOTS];
}

struct gpu_fields {
	__u32 *corr;
	__u64 *call_ts;
	__u16 *flags;
};

static int gpu_fields(struct bs_hdr *rec, struct gpu_fields *f)
{
	switch (rec->type) {
	case BS_REC_GPU_KERNEL: {
		struct bs_gpu_kernel *r = (void *)rec;

		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	case BS_REC_GPU_MEMCPY: {
		struct bs_gpu_memcpy *r = (void *)rec;

		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	case BS_REC_GPU_MEMSET: {
		struct bs_gpu_memset *r = (void *)rec;

		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	}
	return -EINVAL;
}

static void link_emit(struct shim_join *j, struct bs_hdr *rec, const struct corr_slot *s)
{
	struct gpu_fields f;

	if (!gpu_fields(rec, &f) && s) {
		rec->tid = s->tid;
		*f.call_ts = s->call_ts;
		*f.flags |= s->flags;
		if (s->flags & BS_GPU_CALL_CUDA)
			j->st.linked_cuda++;
		else
			j->st.linked_api++;
	} else {
		j->st.unlinked++;
	}
	j->emit(j->arg, rec);
}

void shim_join__api(struct shim_join *j, struct bs_gpu_api *r)
{
	struct corr_slot *s;
	__u64 call = find_call(j, r->h.pid, r->h.tid, r->h.ts, r->h.ts + r->dur);
	__u64 gen = ~0ull;
	__u32 idx;

	if (call) {
		r->call_ts = call;
		r->flags |= BS_GPU_CALL_CUDA;
	}
	s = slot_of(j, r->h.pid, r->correlation, 1);
	if (!s)
		return;
	idx = s->pend;
	*s = (struct corr_slot){ .corr = r->correlation,
				 .tid = r->h.tid,
				 .call_ts = call ? call : r->h.ts,
				 .flags = call ? BS_GPU_CALL_CUDA : BS_GPU_CALL_API };
	/* The GPU records that came first, newest to oldest along the slot's chain. */
	while (idx) {
		struct pending *p = &j->pend[idx - 1];

		if (p->gen >= gen)
			break; /* the index was reused since: the chain ends here */
		gen = p->gen;
		idx = p->prev;
		if (!p->live || p->pid != r->h.pid || p->corr != r->correlation)
			continue;
		p->live = 0;
		link_emit(j, (struct bs_hdr *)p->rec, s);
	}
}

/* Drop the oldest pending record from the ring, emitting it unlinked if still waiting. */
static void pop_oldest(struct shim_join *j)
{
	struct pending *p = &j->pend[j->head];

	if (p->live) {
		p->live = 0;
		link_emit(j, (struct bs_hdr *)p->rec, NULL);
	}
	j->head = (j->head + 1) % JOIN_PENDING;
	j->count--;
}

void shim_join__gpu(struct shim_join *j, struct bs_hdr *rec, __u64 now)
{
	struct gpu_fields f;
	struct corr_slot *s;
	struct pending *p;
	__u32 idx;

	if (gpu_fields(rec, &f)) {
		j->emit(j->arg, rec);
		return;
	}
	s = slot_of(j, rec->pid, *f.corr, 1);
	if (s && s->flags && s->corr == *f.corr) {
		link_emit(j, rec, s);
		return;
	}
	if (!s || rec->size > PENDING_REC) {
		link_emit(j, rec, NULL);
		return;
	}
	if (j->count == JOIN_PENDING)
		pop_oldest(j);
	idx = (j->head + j->count++) % JOIN_PENDING;
	p = &j->pend[idx];
	*p = (struct pending){ .since = now,
			       .gen = ++j->gen,
			       .pid = rec->pid,
			       .corr = *f.corr,
			       .prev = s->pend,
			       .live = 1 };
	memcpy(p->rec, rec, rec->size);
	/*
	 * An empty slot, or another id's (one JOIN_CORR_SLOTS apart, older or newer): this id
	 * takes it, the other's link is forgotten; pending records of both stay on the chain,
	 * each matched by its own id.
	 */
	if (s->corr != *f.corr)
		*s = (struct corr_slot){ .corr = *f.corr, .pend = s->pend };
	s->pend = idx + 1;
}

void shim_join__expire(struct shim_join *j, __u64 now, int all)
{
	while (j->count &&
	       (all || j->pend[j->head].since + JOIN_PENDING_NS <= now || !j->pend[j->head].live))
		pop_oldest(j);
}

void shim_join__stats(const struct shim_join *j, struct shim_join_stats *s)
{
	*s = j->st;
}
