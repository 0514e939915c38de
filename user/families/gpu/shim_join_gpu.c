// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The launch join's GPU side: kernels, copies and memsets linked through their correlation
 * id's slot, or waiting there for their API record (see shim_join.h).
 */
#include <errno.h>
#include <string.h>
#include "shim_join_int.h"

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

		if (rec->size < sizeof(*r))
			break;
		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	case BS_REC_GPU_MEMCPY: {
		struct bs_gpu_memcpy *r = (void *)rec;

		if (rec->size < sizeof(*r))
			break;
		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	case BS_REC_GPU_MEMSET: {
		struct bs_gpu_memset *r = (void *)rec;

		if (rec->size < sizeof(*r))
			break;
		*f = (struct gpu_fields){ &r->correlation, &r->call_ts, &r->flags };
		return 0;
	}
	}
	return -EINVAL;
}

int join_wants_order(struct shim_join *j, __u32 pid)
{
	struct jproc *p;

	if (j->order_always)
		return 1;
	p = join_proc(j, pid, 0);
	return !p || !p->apis;
}

/*
 * Why REC, decided by nothing, has no link: its API record never came; or, in a process that
 * sends none, launch order does not link a CUDA graph's nodes (one launch, many ops).
 */
static __u8 why_undecided(struct shim_join *j, const struct bs_hdr *rec, const struct gpu_fields *f)
{
	struct jproc *p = join_proc(j, rec->pid, 0);

	return p && !p->apis && (*f->flags & BS_GPU_GRAPH) ? JOIN_WHY_GRAPH : JOIN_WHY_NO_API;
}

void join_link_emit(struct shim_join *j, struct bs_hdr *rec, const struct corr_slot *s)
{
	struct gpu_fields f;

	if (gpu_fields(rec, &f)) {
		j->emit(j->arg, rec);
		return;
	}
	if (s && s->flags) {
		rec->tid = s->tid;
		*f.call_ts = s->call_ts;
		*f.flags = (*f.flags & ~(BS_GPU_CALL_CUDA | BS_GPU_CALL_API)) | s->flags;
	}
	if (*f.flags & BS_GPU_CALL_CUDA) {
		j->st.linked_cuda++;
		j->st.linked_order += s && s->order == JOIN_ORDER_DECIDED;
	} else {
		if (*f.flags & BS_GPU_CALL_API)
			j->st.linked_api++;
		else
			j->st.unlinked++;
		j->st.why[s && (s->flags || s->order == JOIN_ORDER_DECIDED)
				  ? s->why
				  : why_undecided(j, rec, &f)]++;
	}
	j->emit(j->arg, rec);
}

void join_release_chain(struct shim_join *j, __u32 pid, struct corr_slot *s)
{
	__u32 idx = s->pend, *link = &s->pend;
	__u64 gen = ~0ull;

	/*
	 * Records of another id of the slot (one JOIN_CORR_SLOTS apart, waiting too) stay on
	 * the chain, in their order, for their own id's turn.
	 */
	s->pend = 0;
	while (idx) {
		struct pending *p = &j->pend[idx - 1];
		__u32 here = idx;

		if (p->gen >= gen)
			break; /* the index was reused since: the chain ends here */
		gen = p->gen;
		idx = p->prev;
		if (!p->live || p->pid != pid)
			continue;
		if (p->corr != s->corr) {
			*link = here;
			link = &p->prev;
			continue;
		}
		p->live = 0;
		join_link_emit(j, (struct bs_hdr *)p->rec, s);
	}
	*link = 0;
}

/* Drop the oldest pending record from the ring, emitting it unlinked if still waiting. */
static void pop_oldest(struct shim_join *j)
{
	struct pending *p = &j->pend[j->head];

	if (p->live) {
		p->live = 0;
		join_link_emit(j, (struct bs_hdr *)p->rec, NULL);
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

	if (!gpu_fields(rec, &f) && join_wants_order(j, rec->pid))
		order_link__op(j->order, rec, now); /* a file's linked ones too: they hold places */
	if (gpu_fields(rec, &f)) {
		join_link_emit(j, rec, NULL);
		return;
	}
	if (*f.flags & BS_GPU_CALL_CUDA) { /* linked already (a file's): kept */
		s = join_slot(j, rec->pid, *f.corr);
		if (s)
			join_order_check(j, s, *f.corr, rec->tid, *f.call_ts);
		if (s && (s->corr != *f.corr || (!s->flags && !s->order)))
			*s = (struct corr_slot){ .corr = *f.corr,
						 .tid = rec->tid,
						 .call_ts = *f.call_ts,
						 .order = JOIN_ORDER_FILE,
						 .pend = s->pend };
		join_link_emit(j, rec, NULL);
		return;
	}
	s = join_slot(j, rec->pid, *f.corr);
	if (s && (s->flags || s->order == JOIN_ORDER_DECIDED) && s->corr == *f.corr) {
		join_link_emit(j, rec, s);
		return;
	}
	if (!s || rec->size > PENDING_REC || !j->pend) {
		join_link_emit(j, rec, NULL);
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

void join_pending_expire(struct shim_join *j, __u64 now, int all)
{
	while (j->count &&
	       (all || j->pend[j->head].since + JOIN_WAIT_NS <= now || !j->pend[j->head].live))
		pop_oldest(j);
}

void join_pending_drop_pid(struct shim_join *j, __u32 pid)
{
	for (__u32 i = 0; i < j->count; i++) {
		struct pending *p = &j->pend[(j->head + i) % JOIN_PENDING];

		if (p->live && (!pid || p->pid == pid)) {
			p->live = 0;
			join_link_emit(j, (struct bs_hdr *)p->rec, NULL);
		}
	}
}

/* An API record decided S's id: count whether launch order's guess named the same call. */
void join_order_check(struct shim_join *j, const struct corr_slot *s, __u32 corr, __u32 tid,
		      __u64 call_ts)
{
	if (s->corr != corr || s->order != JOIN_ORDER_GUESS || !s->tid)
		return;
	if (s->tid == tid && s->call_ts == call_ts)
		j->st.order_agree++;
	else
		j->st.order_differ++;
}

void join_order_decided(void *arg, __u32 pid, __u32 corr, __u32 tid, __u64 call_ts)
{
	struct shim_join *j = arg;
	struct jproc *p = join_proc(j, pid, 0);
	struct corr_slot *s;
	int guess;

	if (!p)
		return;
	s = p->slots ? &p->slots[corr % JOIN_CORR_SLOTS] : NULL;
	if (s && s->corr == corr && (s->flags || s->order == JOIN_ORDER_FILE)) {
		struct corr_slot g = {
			.corr = corr, .tid = tid, .call_ts = call_ts, .order = JOIN_ORDER_GUESS
		};

		/* Linked first (CUPTI's API record, the file's): compare. */
		if ((s->flags & BS_GPU_CALL_CUDA) || s->order == JOIN_ORDER_FILE)
			join_order_check(j, &g, corr, s->tid, s->call_ts);
		return;
	}
	s = join_slot(j, pid, corr);
	if (!s)
		return;
	/* A process whose API records link (or will): launch order's call only to compare. */
	guess = p->apis != 0;
	*s = (struct corr_slot){ .corr = corr,
				 .tid = tid,
				 .call_ts = call_ts,
				 .flags = tid && !guess ? BS_GPU_CALL_CUDA : 0,
				 .why = tid	   ? 0
					: p->calls ? JOIN_WHY_NO_ORDER
						   : JOIN_WHY_NO_CUDA,
				 .order = guess ? JOIN_ORDER_GUESS : JOIN_ORDER_DECIDED,
				 .pend = s->pend };
	if (!guess)
		join_release_chain(j, pid, s);
}
