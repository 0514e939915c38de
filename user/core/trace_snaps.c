// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The job's threads as snapshots read them, kept for the reports (trace_snaps.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "trace_snaps.h"

struct trace_snaps {
	struct bs_proc_snap *procs;
	size_t nprocs, pcap;
	struct bs_thread_snap *threads;
	size_t nthreads, tcap;
	struct hmap *index; /* {type | edge << 16, pid or tid} -> position + 1 */
	__u64 taken;	    /* the trigger's */
	__u64 edge_ts[3];   /* [1] the start's, [2] the end's */
};

/* BS_SNAP_AT_START -> 1, _AT_END -> 2, else 0 (a trigger's). */
static int edge_of(__u32 flags)
{
	return flags & BS_SNAP_AT_START ? 1 : flags & BS_SNAP_AT_END ? 2 : 0;
}

struct trace_snaps *trace_snaps__new(void)
{
	struct trace_snaps *t = calloc(1, sizeof(*t));

	if (t && !(t->index = hmap__new(sizeof(size_t)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void trace_snaps__free(struct trace_snaps *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t->threads);
	hmap__free(t->index);
	free(t);
}

/*
 * The slot of the record of TYPE about ID at EDGE (a later one replaces it); NULL when out of
 * memory.
 */
static void *slot(struct trace_snaps *t, __u16 type, int edge, __u32 id)
{
	size_t *pos = hmap__get(t->index, (struct hkey){ type | (__u64)edge << 16, id }, 1);
	int proc = type == BS_REC_PROC_SNAP;
	size_t *n = proc ? &t->nprocs : &t->nthreads;

	if (!pos)
		return NULL;
	if (!*pos) {
		if (proc ? array__grow((void **)&t->procs, *n, &t->pcap, sizeof(*t->procs))
			 : array__grow((void **)&t->threads, *n, &t->tcap, sizeof(*t->threads)))
			return NULL;
		*pos = ++*n;
	}
	return proc ? (void *)&t->procs[*pos - 1] : (void *)&t->threads[*pos - 1];
}

int trace_snaps__add(struct trace_snaps *t, const struct bs_hdr *rec)
{
	void *s;
	int edge;

	if ((rec->type == BS_REC_PROC_SNAP && rec->size >= sizeof(struct bs_proc_snap) &&
	     (((const struct bs_proc_snap *)rec)->edge & BS_SNAP_NOW)) ||
	    (rec->type == BS_REC_THREAD_SNAP && rec->size >= sizeof(struct bs_thread_snap) &&
	     (((const struct bs_thread_snap *)rec)->flags & BS_SNAP_NOW)))
		return 0; /* a live view's (top), not the file's */
	if (rec->type == BS_REC_PROC_SNAP && rec->size >= sizeof(struct bs_proc_snap)) {
		edge = edge_of(((const struct bs_proc_snap *)rec)->edge);
		s = slot(t, rec->type, edge, rec->pid);
		if (s)
			memcpy(s, rec, sizeof(struct bs_proc_snap));
		if (!edge && rec->ts > t->taken)
			t->taken = rec->ts;
		if (edge && rec->ts && (!t->edge_ts[edge] || rec->ts < t->edge_ts[edge]))
			t->edge_ts[edge] = rec->ts; /* its first process's: when it began */
	} else if (rec->type == BS_REC_THREAD_SNAP && rec->size >= sizeof(struct bs_thread_snap)) {
		edge = edge_of(((const struct bs_thread_snap *)rec)->flags);
		s = slot(t, rec->type, edge, rec->tid);
		if (s)
			memcpy(s, rec, sizeof(struct bs_thread_snap));
	} else {
		return 0;
	}
	return s ? 0 : -ENOMEM;
}

const struct bs_proc_snap *trace_snaps__proc(const struct trace_snaps *t, __u32 pid)
{
	const size_t *pos = t ? hmap__get(t->index, (struct hkey){ BS_REC_PROC_SNAP, pid }, 0) : 0;

	return pos && *pos ? &t->procs[*pos - 1] : NULL;
}

const struct bs_thread_snap *trace_snaps__thread(const struct trace_snaps *t, __u32 tid)
{
	const size_t *pos =
		t ? hmap__get(t->index, (struct hkey){ BS_REC_THREAD_SNAP, tid }, 0) : NULL;

	return pos && *pos ? &t->threads[*pos - 1] : NULL;
}

const struct bs_thread_snap *trace_snaps__next_thread(const struct trace_snaps *t, size_t *i)
{
	return trace_snaps__next_thread_at(t, 0, i);
}

const struct bs_proc_snap *trace_snaps__next_proc(const struct trace_snaps *t, size_t *i)
{
	return trace_snaps__next_proc_at(t, 0, i);
}

const struct bs_thread_snap *trace_snaps__thread_at(const struct trace_snaps *t, __u32 tid,
						    __u32 edge)
{
	int e = edge_of(edge);
	const size_t *pos =
		t ? hmap__get(t->index, (struct hkey){ BS_REC_THREAD_SNAP | (__u64)e << 16, tid },
			      0)
		  : NULL;

	return pos && *pos ? &t->threads[*pos - 1] : NULL;
}

const struct bs_proc_snap *trace_snaps__proc_at(const struct trace_snaps *t, __u32 pid, __u32 edge)
{
	int e = edge_of(edge);
	const size_t *pos =
		t ? hmap__get(t->index, (struct hkey){ BS_REC_PROC_SNAP | (__u64)e << 16, pid }, 0)
		  : NULL;

	return pos && *pos ? &t->procs[*pos - 1] : NULL;
}

const struct bs_thread_snap *trace_snaps__next_thread_at(const struct trace_snaps *t, __u32 edge,
							 size_t *i)
{
	int e = edge_of(edge);

	while (t && *i < t->nthreads)
		if (edge_of(t->threads[(*i)++].flags) == e)
			return &t->threads[*i - 1];
	return NULL;
}

const struct bs_proc_snap *trace_snaps__next_proc_at(const struct trace_snaps *t, __u32 edge,
						     size_t *i)
{
	int e = edge_of(edge);

	while (t && *i < t->nprocs)
		if (edge_of(t->procs[(*i)++].edge) == e)
			return &t->procs[*i - 1];
	return NULL;
}

__u64 trace_snaps__edge_ts(const struct trace_snaps *t, __u32 edge)
{
	return t ? t->edge_ts[edge_of(edge)] : 0;
}

__u64 trace_snaps__taken(const struct trace_snaps *t)
{
	return t ? t->taken : 0;
}

int trace_snaps__blocked(const struct bs_thread_snap *a, const struct bs_thread_snap *b)
{
	return a && b && a->h.pid == b->h.pid && !(a->flags & BS_SNAP_RUNNING) &&
	       !(b->flags & BS_SNAP_RUNNING) && a->state && b->state && a->syscall == b->syscall &&
	       a->cpu_ns == b->cpu_ns;
}
