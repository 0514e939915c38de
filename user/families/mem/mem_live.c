// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The blocks live in each process and device (mem_live.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "array.h"
#include "hmap.h"
#include "mem_live.h"
#include "msg.h"

/* A process's device: its totals (mem_live__dev's answer) and its blocks. */
struct mem_pdev {
	struct mem_dev d;
	struct hmap *blocks; /* (addr, 0) -> struct mem_block */
};

/* What a process has: all that forgetting it removes, and only that. */
struct mem_proc {
	__s16 *devs; /* the devices it used, each a key of mem_live.devs */
	size_t ndevs, cap;
	struct hmap *deleted; /* (tid, 0) -> the address its last CPU Delete freed; NULL: none */
};

struct mem_live {
	struct hmap *procs; /* (pid, 0) -> struct mem_proc */
	struct hmap *devs;  /* (pid << 16 | device, 0) -> struct mem_pdev */
	__u64 nblocks;
	__u64 unkept; /* blocks, devices and Deletes not kept for want of memory */
};

static struct hkey pid_dev(__u32 pid, __s16 device)
{
	return (struct hkey){ (__u64)pid << 16 | (__u16)device, 0 };
}

double mem_alloc__weight(const struct bs_mem_alloc *r)
{
	if (!r->sample_rate || r->flags & BS_MEM_EARLY)
		return 1;
	if (!(r->flags & BS_MEM_SAMPLED) || !r->bytes)
		return 0;
	return 1 / -expm1(-(double)r->bytes / r->sample_rate);
}

struct mem_live *mem_live__new(void)
{
	struct mem_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->procs = hmap__new(sizeof(struct mem_proc));
	l->devs = hmap__new(sizeof(struct mem_pdev));
	if (!l->procs || !l->devs) {
		mem_live__free(l);
		return NULL;
	}
	return l;
}

void mem_live__free(struct mem_live *l)
{
	struct mem_proc *p;
	struct mem_pdev *d;
	size_t it = 0;

	if (!l)
		return;
	while (l->procs && (p = hmap__next(l->procs, &it, NULL))) {
		free(p->devs);
		hmap__free(p->deleted);
	}
	it = 0;
	while (l->devs && (d = hmap__next(l->devs, &it, NULL)))
		hmap__free(d->blocks);
	hmap__free(l->procs);
	hmap__free(l->devs);
	free(l);
}

/* A block, device or Delete not kept: the views undercount from here, which is said once. */
static void unkept(struct mem_live *l)
{
	if (!l->unkept++)
		pr_warn("out of memory: some memory blocks are not kept, so live bytes, peaks and "
			"frees undercount from here\n");
}

__u64 mem_live__unkept(const struct mem_live *l)
{
	return l->unkept;
}

static struct mem_pdev *pdev_get(const struct mem_live *l, __u32 pid, __s16 device)
{
	return hmap__get(l->devs, pid_dev(pid, device), 0);
}

/* PID's DEVICE, made the first time (and listed in its process's), or NULL. */
static struct mem_pdev *pdev_make(struct mem_live *l, __u32 pid, __s16 device)
{
	struct mem_pdev *d = pdev_get(l, pid, device);
	struct mem_proc *p;
	struct hmap *blocks;

	if (d)
		return d;
	p = hmap__get(l->procs, (struct hkey){ pid, 0 }, 1);
	/* from 4: a process uses the CPU and a device or two */
	if (!p || array__grow_from((void **)&p->devs, p->ndevs, &p->cap, sizeof(*p->devs), 4))
		return NULL;
	blocks = hmap__new(sizeof(struct mem_block));
	d = blocks ? hmap__get(l->devs, pid_dev(pid, device), 1) : NULL;
	if (!d) {
		hmap__free(blocks);
		return NULL;
	}
	d->blocks = blocks;
	p->devs[p->ndevs++] = device;
	return d;
}

/*
 * A CPU free's bookkeeping: 1 when R is the report of the free its thread's Delete just wrote
 * (bpf/mem.bpf.c keeps those whose reporter's total fell to 0), to be left out. A CPU block
 * lives at one address at a time: a report of an address no block holds was either that, or
 * a map made before the recording (which counts the size it says).
 */
static int delete_echo(struct mem_live *l, const struct bs_mem_alloc *r, int live)
{
	struct hkey k = { r->h.tid, 0 };
	struct mem_proc *p;
	__u64 *last;

	if (r->device != BS_MEM_DEV_CPU)
		return 0;
	if (r->source == BS_MEM_SRC_CPU) {
		p = hmap__get(l->procs, (struct hkey){ r->h.pid, 0 }, 1);
		if (p && !p->deleted)
			p->deleted = hmap__new(sizeof(__u64));
		last = p && p->deleted ? hmap__get(p->deleted, k, 1) : NULL;
		if (last)
			*last = r->addr;
		else
			unkept(l);
		return 0;
	}
	p = hmap__get(l->procs, (struct hkey){ r->h.pid, 0 }, 0);
	if (live || !p || !p->deleted || !(last = hmap__get(p->deleted, k, 0)) || *last != r->addr)
		return 0;
	*last = 0;
	return 1;
}

__u64 mem_live__apply(struct mem_live *l, const struct bs_mem_alloc *r, __u32 site,
		      struct mem_block *freed)
{
	struct hkey bk = { r->addr, 0 };
	struct mem_block *b = NULL;
	struct mem_pdev *d;
	__u64 bytes;

	if (r->flags & BS_MEM_FREE) {
		d = pdev_get(l, r->h.pid, r->device);
		if (d)
			b = hmap__get(d->blocks, bk, 0);
		if (delete_echo(l, r, b != NULL)) {
			if (freed)
				*freed = (struct mem_block){ 0 };
			return 0;
		}
		if (!b) { /* allocated before anything was seen: what the record says, if it does */
			if (freed)
				*freed = (struct mem_block){ .bytes = r->bytes };
			return r->bytes;
		}
		bytes = b->bytes;
		if (freed)
			*freed = *b;
		d->d.live = d->d.live > bytes ? d->d.live - bytes : 0;
		hmap__del(d->blocks, bk);
		l->nblocks--;
		return bytes;
	}
	if (!r->bytes)
		return 0;
	d = pdev_make(l, r->h.pid, r->device);
	b = d ? hmap__get(d->blocks, bk, 1) : NULL;
	if (!b) {
		unkept(l);
		return r->bytes; /* counted, not kept */
	}
	if (b->bytes) /* the same address again without its free (a lost record) */
		d->d.live = d->d.live > b->bytes ? d->d.live - b->bytes : 0;
	else
		l->nblocks++;
	b->bytes = r->bytes;
	b->ts = r->h.ts;
	b->tid = r->h.tid;
	b->site = site;
	b->stream = b->requested = 0;
	d->d.live += r->bytes;
	if (d->d.live > d->d.peak) {
		d->d.peak = d->d.live;
		d->d.peak_ts = r->h.ts;
	}
	return r->bytes;
}

void mem_live__stream(struct mem_live *l, const struct bs_mem_stream *r)
{
	struct mem_pdev *d = pdev_get(l, r->h.pid, r->device);
	struct mem_block *b = d ? hmap__get(d->blocks, (struct hkey){ r->addr, 0 }, 0) : NULL;

	if (b) {
		b->stream = r->stream;
		b->requested = r->requested;
	}
}

const struct mem_block *mem_live__get(const struct mem_live *l, __u32 pid, __s16 device, __u64 addr)
{
	const struct mem_pdev *d = pdev_get(l, pid, device);

	return d ? hmap__get(d->blocks, (struct hkey){ addr, 0 }, 0) : NULL;
}

const struct mem_dev *mem_live__dev(const struct mem_live *l, __u32 pid, __s16 device)
{
	const struct mem_pdev *d = pdev_get(l, pid, device);

	return d ? &d->d : NULL;
}

void mem_live__held(const struct mem_live *l, const struct bs_mem_alloc *r, struct mem_held *h)
{
	const struct mem_dev *d;

	if (r->flags & BS_MEM_TOTALS) {
		*h = (struct mem_held){ r->allocated, r->reserved, 1 };
		return;
	}
	d = mem_live__dev(l, r->h.pid, r->device);
	*h = (struct mem_held){ d ? d->live : 0, 0, 0 };
}

/* FN for every block of D, PID's DEVICE. */
static void pdev_each(const struct mem_pdev *d, __u32 pid, __s16 device,
		      void (*fn)(void *arg, __u32 pid, __s16 device, __u64 addr,
				 const struct mem_block *b),
		      void *arg)
{
	const struct mem_block *b;
	struct hkey k;
	size_t it = 0;

	while ((b = hmap__next(d->blocks, &it, &k)))
		fn(arg, pid, device, k.a, b);
}

void mem_live__each(const struct mem_live *l, __u32 pid, __s16 device,
		    void (*fn)(void *arg, __u32 pid, __s16 device, __u64 addr,
			       const struct mem_block *b),
		    void *arg)
{
	const struct mem_pdev *d;
	struct hkey k;
	size_t it = 0;

	if (pid) {
		if ((d = pdev_get(l, pid, device)))
			pdev_each(d, pid, device, fn, arg);
		return;
	}
	while ((d = hmap__next(l->devs, &it, &k)))
		pdev_each(d, k.a >> 16, (__s16)(__u16)k.a, fn, arg);
}

void mem_live__forget(struct mem_live *l, __u32 pid)
{
	struct mem_proc *p = hmap__get(l->procs, (struct hkey){ pid, 0 }, 0);
	struct mem_pdev *d;

	if (!p)
		return;
	for (size_t i = 0; i < p->ndevs; i++) {
		d = pdev_get(l, pid, p->devs[i]);
		if (!d)
			continue;
		l->nblocks -= hmap__count(d->blocks);
		hmap__free(d->blocks);
		hmap__del(l->devs, pid_dev(pid, p->devs[i]));
	}
	free(p->devs);
	hmap__free(p->deleted);
	hmap__del(l->procs, (struct hkey){ pid, 0 });
}

__u64 mem_live__count(const struct mem_live *l)
{
	return l->nblocks;
}

void mem_visit(const struct mem_visit *v, void *arg, const struct bs_hdr *h)
{
	const struct bs_fork *f = (const void *)h;

	switch (h->type) {
	case BS_REC_MEM_ALLOC:
		if (v->alloc && h->size >= sizeof(struct bs_mem_alloc))
			v->alloc(arg, (const void *)h);
		break;
	case BS_REC_MEM_RSS:
		if (v->rss && h->size >= sizeof(struct bs_mem_rss))
			v->rss(arg, h->pid, h->ts, ((const struct bs_mem_rss *)h)->rss);
		break;
	case BS_REC_MEM_GROW:
	case BS_REC_MEM_SHRINK:
		if (v->rss && h->size >= sizeof(struct bs_mem_grow))
			v->rss(arg, h->pid, h->ts, ((const struct bs_mem_grow *)h)->rss);
		break;
	case BS_REC_MEM_OOM:
		if (v->oom && h->size >= sizeof(struct bs_mem_oom))
			v->oom(arg, (const void *)h);
		break;
	case BS_REC_EXIT:
		if (v->gone && h->size >= sizeof(struct bs_exit) &&
		    ((const struct bs_exit *)h)->group_dead)
			v->gone(arg, h->pid, h->ts, MEM_GONE_EXIT);
		break;
	case BS_REC_EXEC:
		if (v->gone)
			v->gone(arg, h->pid, h->ts, MEM_GONE_EXEC);
		break;
	case BS_REC_FORK:
		if (v->gone && h->size >= sizeof(*f) && f->child_pid == f->child_tid)
			v->gone(arg, f->child_pid, h->ts, MEM_GONE_RECYCLED);
		break;
	}
}

int mem_view__new(size_t val_size, void **st)
{
	struct mem_view *v = calloc(1, sizeof(*v));

	if (v) {
		v->live = mem_live__new();
		v->map = hmap__new(val_size);
	}
	if (!v || !v->live || !v->map) {
		mem_view__free(v);
		return -ENOMEM;
	}
	*st = v;
	return 0;
}

void mem_view__free(void *st)
{
	struct mem_view *v = st;

	if (!v)
		return;
	mem_live__free(v->live);
	hmap__free(v->map);
	free(v);
}
