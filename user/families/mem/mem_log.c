// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Every allocation of a trace, in file order (mem_log.h). */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "hmap.h"
#include "mem_live.h"
#include "mem_log.h"
#include "mem_site.h"

struct mem_log *mem_log__new(void)
{
	struct mem_log *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->live = mem_live__new();
	l->dev_of = hmap__new(sizeof(__u32));
	if (!l->live || !l->dev_of) {
		mem_log__free(l);
		return NULL;
	}
	return l;
}

void mem_log__free(struct mem_log *l)
{
	if (!l)
		return;
	free(l->v);
	free(l->devs);
	mem_live__free(l->live);
	hmap__free(l->dev_of);
	free(l);
}

/* The index of REC's process's device, made when first met; -1 when out of memory. */
static long dev_index(struct mem_log *l, const struct bs_mem_alloc *r)
{
	__u32 *idx = hmap__get(l->dev_of, (struct hkey){ r->h.pid, (__u16)r->device }, 1);

	if (!idx)
		return -1;
	if (!*idx) {
		if (array__grow((void **)&l->devs, l->ndevs, &l->cap_devs, sizeof(*l->devs)))
			return -1;
		l->devs[l->ndevs] = (struct mem_log_dev){ .pid = r->h.pid,
							  .device = r->device,
							  .first_ts = r->h.ts };
		*idx = (__u32)++l->ndevs;
	}
	return (long)*idx - 1;
}

/* The entry a live block stands for (its tag is the entry's index + 1), as freed at TS. */
static void end_entry(struct mem_log *l, const struct mem_block *b, __u64 ts)
{
	if (b->site && b->site <= l->n) {
		l->v[b->site - 1].free_ts = ts;
		l->v[b->site - 1].free_seq = (__u32)l->n;
	}
}

void mem_log__add(struct mem_log *l, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	const struct mem_dev *d;
	const struct mem_block *old;
	struct mem_block freed;
	struct mem_log_dev *ld;
	__u64 before;
	long dev;

	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	    ((const struct bs_exit *)rec)->group_dead) {
		for (size_t i = 0; i < l->ndevs; i++)
			l->devs[i].exited |= l->devs[i].pid == rec->pid;
		return;
	}
	if (rec->type != BS_REC_MEM_ALLOC || l->err)
		return;
	dev = dev_index(l, r);
	if (dev < 0) {
		l->err = -ENOMEM;
		return;
	}
	ld = &l->devs[dev];
	if (rec->ts > ld->last_ts)
		ld->last_ts = rec->ts;
	if (r->flags & BS_MEM_TOTALS && r->allocated > ld->peak_total)
		ld->peak_total = r->allocated;
	if (r->flags & BS_MEM_FREE) {
		if (mem_live__apply(l->live, r, 0, &freed))
			end_entry(l, &freed, rec->ts);
		return;
	}
	if (!r->bytes)
		return;
	if (r->flags & BS_MEM_EARLY)
		ld->early_ts = rec->ts;
	if (l->n >= MEM_LOG_LIVE - 1 || array__grow((void **)&l->v, l->n, &l->cap, sizeof(*l->v))) {
		l->err = -ENOMEM;
		return;
	}
	old = mem_live__get(l->live, rec->pid, r->device, r->addr);
	if (old) /* its free was lost: the block ended when the address was given again */
		end_entry(l, old, rec->ts);
	d = mem_live__dev(l->live, rec->pid, r->device);
	before = d ? d->peak : 0;
	l->v[l->n] =
		(struct mem_entry){ .ts = rec->ts,
				    .bytes = r->bytes,
				    .free_seq = MEM_LOG_LIVE,
				    .stack = r->flags & BS_MEM_EARLY ? MEM_SITE_STACK_EARLY
								     : mem_sites__stack_of(m, rec),
				    .tid = rec->tid,
				    .dev = (__u32)dev,
				    .weight = (float)mem_alloc__weight(r) };
	mem_live__apply(l->live, r, (__u32)l->n + 1, NULL);
	d = mem_live__dev(l->live, rec->pid, r->device);
	if (d && d->peak > before) {
		ld->peak = d->peak;
		ld->peak_ts = rec->ts;
		ld->peak_entry = (__u32)l->n;
	}
	ld->allocs++;
	l->n++;
}
