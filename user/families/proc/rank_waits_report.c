// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rank_waits: a row per rank of the job (RANK in its environment): how long its main thread
 * waited in collectives, in which and at which line of the job's code, its share of the
 * rank's time, and its largest wait elsewhere. What nccl_stragglers says of NCCL's calls, for
 * any backend (gloo has no probe): the rank that waits least is the one the others wait for.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frame_sum.h"
#include "hmap.h"
#include "proc.h"
#include "rank_waits.h"
#include "sched_records.h"
#include "snap_records.h"
#include "stack_call.h"
#include "table.h"
#include "trace_model.h"
#include "trace_ranks.h"
#include "trace_snaps.h"

/* What a stack is in, once per stack: stack_call__in walks every family's API table. */
struct stack_call {
	int known, collective;
	char call[RANK_WAITS_CALL];
};

static void rank_waits__free(void *vst)
{
	struct rank_waits *st = vst;

	if (st) {
		hmap__free(st->calls);
		hmap__free(st->mains);
		hmap__free(st->elsewhere);
	}
	free(st);
}

static void *rank_waits__new(void)
{
	struct rank_waits *st = calloc(1, sizeof(*st));

	if (st && (!(st->calls = hmap__new(sizeof(struct stack_call))) ||
		   !(st->mains = hmap__new(sizeof(struct main_waits))) ||
		   !(st->elsewhere = hmap__new(sizeof(__u64))))) {
		rank_waits__free(st);
		st = NULL;
	}
	return st;
}

static const struct stack_call *classify(struct rank_waits *st, const struct trace_stack *s,
					 const struct trace_model *m)
{
	struct stack_call *c = hmap__get(st->calls, (struct hkey){ (__u64)(uintptr_t)s, 0 }, 1);

	if (c && !c->known) {
		c->known = 1;
		c->collective = stack_call__in(s, m, c->call, sizeof(c->call)) &&
				(!strncmp(c->call, "nccl", 4) ||
				 !strncmp(c->call, "torch.distributed", 17));
	}
	return c;
}

static void rank_waits__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_offcpu *o = (const void *)rec;
	const struct bs_fork *f = (const void *)rec;
	struct rank_waits *st = vst;
	const struct bs_frame *own, *via;
	const struct trace_stack *s;
	const struct stack_call *c;
	struct main_waits *w;
	__u64 *ns;

	if (rec->type == BS_REC_FORK && f->child_pid == f->child_tid) {
		if ((w = hmap__get(st->mains, (struct hkey){ f->child_pid, 0 }, 1)))
			w->born = rec->ts;
		return;
	}
	if (rec->type == BS_REC_EXIT && rec->pid == rec->tid) {
		if ((w = hmap__get(st->mains, (struct hkey){ rec->pid, 0 }, 1)))
			w->died = rec->ts;
		return;
	}
	/* main threads only: a rank's own work; its library's threads idle by design */
	if (rec->type != BS_REC_OFFCPU || rec->pid != rec->tid ||
	    !(s = trace_model__event_stack(m, rec)) || !(c = classify(st, s, m)))
		return;
	own = frame_sum__own_site(s, m, &via);
	if (!c->collective) {
		if (own && (ns = hmap__get(st->elsewhere,
					   (struct hkey){ rec->pid, (__u64)(uintptr_t)own }, 1)))
			*ns += o->dur;
		return;
	}
	if (!(w = hmap__get(st->mains, (struct hkey){ rec->pid, 0 }, 1)))
		return; /* out of memory: the rows undercount, they never invent */
	w->coll_ns += o->dur;
	w->coll_count++;
	if (!w->call[0]) {
		snprintf(w->call, sizeof(w->call), "%s", c->call);
		w->coll_at = own;
	}
}

static int by_rank(const void *a, const void *b)
{
	const struct rank_of *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

size_t rank_waits__ranks(const struct trace_model *m, struct rank_of *r, size_t max)
{
	static const __u32 edges[] = { BS_SNAP_AT_END, BS_SNAP_AT_START, 0 };
	const struct trace_snaps *s = trace_model__snaps(m);
	const struct bs_proc_snap *p;
	size_t i = 0, n = 0, k;

	/* the edges', else a trigger's snapshot (a flight recorder's dump has no edges) */
	for (int e = 0;;) {
		p = edges[e] ? trace_snaps__next_proc_at(s, edges[e], &i)
			     : trace_snaps__next_proc(s, &i);
		if (!p && edges[e++]) {
			i = 0;
			continue;
		}
		if (!p || n == max)
			break;
		__s32 rank = p->env_rank >= 0 ? p->env_rank : p->env_local_rank;

		for (k = 0; k < n && r[k].pid != p->h.pid; k++)
			;
		if (rank >= 0 && k == n) /* read at both edges: once */
			r[n++] = (struct rank_of){ p->h.pid, rank };
	}
	qsort(r, n, sizeof(*r), by_rank);
	return n;
}

const struct bs_frame *rank_waits__elsewhere(const struct rank_waits *w, __u32 pid, __u64 *ns)
{
	const struct bs_frame *top = NULL;
	const __u64 *v;
	struct hkey k;
	size_t it = 0;

	*ns = 0;
	while ((v = hmap__next(w->elsewhere, &it, &k)))
		if (k.a == pid && *v > *ns) {
			*ns = *v;
			top = (const void *)(uintptr_t)k.b;
		}
	return top;
}

#define MAX_RANKS 1024

static int rank_waits__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_RANK,
		C_PID,
		C_WAITS,
		C_WAIT,
		C_LIFE,
		C_PCT,
		C_CALL,
		C_AT,
		C_ELSE,
		C_ELSE_AT,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_WAITS] = { "waits", "Waits", TABLE_U64 },
		[C_WAIT] = { "wait_ns", "In Collectives", TABLE_U64 },
		[C_LIFE] = { "life_ns", "Of Its Time", TABLE_U64 },
		[C_PCT] = { "wait_pct", "Wait (%)", TABLE_DOUBLE, 0, 1 },
		[C_CALL] = { "collective", "Collective", TABLE_STR },
		[C_AT] = { "at", "At", TABLE_STR },
		[C_ELSE] = { "elsewhere_ns", "Blocked Elsewhere", TABLE_U64 },
		[C_ELSE_AT] = { "elsewhere_at", "Most At", TABLE_STR },
	};
	struct rank_waits *st = vst;
	struct rank_of *r = calloc(MAX_RANKS, sizeof(*r));
	size_t n = r ? rank_waits__ranks(m, r, MAX_RANKS) : 0;
	__u64 start = trace_model__start(m), end = trace_model__end(m);
	char at[256];

	if (!r)
		return -ENOMEM;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		const struct main_waits *w = hmap__get(st->mains, (struct hkey){ r[i].pid, 0 }, 0);
		__u64 b = w && w->born > start ? w->born : start, e = w && w->died ? w->died : end;
		__u64 life = e > b ? e - b : 0, other;
		const struct bs_frame *f = rank_waits__elsewhere(st, r[i].pid, &other);

		table__row(t);
		table__set_s64(t, C_RANK, r[i].rank);
		table__set_u64(t, C_PID, trace_ranks__host_pid(r[i].pid)); /* the host's */
		table__set_u64(t, C_WAITS, w ? w->coll_count : 0);
		table__set_u64(t, C_WAIT, w ? w->coll_ns : 0);
		if (life) {
			table__set_u64(t, C_LIFE, life);
			table__set_double(t, C_PCT, 100.0 * (w ? w->coll_ns : 0) / life);
		}
		if (w && w->call[0]) {
			table__set_str(t, C_CALL, w->call);
			if (w->coll_at)
				table__set_str(t, C_AT,
					       stack_call__frame(w->coll_at, m, at, sizeof(at)));
		}
		table__set_u64(t, C_ELSE, other);
		if (f)
			table__set_str(t, C_ELSE_AT, stack_call__frame(f, m, at, sizeof(at)));
	}
	free(r);
	return table__err(t);
}

const struct report rank_waits_report = {
	.name = "rank_waits",
	.desc = "Where each rank waited: in collectives (any backend: NCCL, gloo) or elsewhere, by "
		"its off-CPU stacks (--stacks=sched)",
	.new = rank_waits__new,
	.add = rank_waits__add,
	.emit = rank_waits__emit,
	.free = rank_waits__free,
};
