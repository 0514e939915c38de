// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The hang trigger's snapshot, kept for the reports (trace_snaps.h). */
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
	struct hmap *index; /* {type, pid or tid} -> position + 1 */
	__u64 taken;
};

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

/* The slot of the record of TYPE about ID (a later one replaces it); NULL when out of memory. */
static void *slot(struct trace_snaps *t, __u16 type, __u32 id)
{
	size_t *pos = hmap__get(t->index, (struct hkey){ type, id }, 1);
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

	if (rec->type == BS_REC_PROC_SNAP && rec->size >= sizeof(struct bs_proc_snap)) {
		s = slot(t, rec->type, rec->pid);
		if (s)
			memcpy(s, rec, sizeof(struct bs_proc_snap));
		if (rec->ts > t->taken)
			t->taken = rec->ts;
	} else if (rec->type == BS_REC_THREAD_SNAP && rec->size >= sizeof(struct bs_thread_snap)) {
		s = slot(t, rec->type, rec->tid);
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
	return t && *i < t->nthreads ? &t->threads[(*i)++] : NULL;
}

const struct bs_proc_snap *trace_snaps__next_proc(const struct trace_snaps *t, size_t *i)
{
	return t && *i < t->nprocs ? &t->procs[(*i)++] : NULL;
}

__u64 trace_snaps__taken(const struct trace_snaps *t)
{
	return t ? t->taken : 0;
}
