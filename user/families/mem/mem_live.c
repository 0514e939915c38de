// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The blocks live in each process and device (mem_live.h). */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem_live.h"

struct mem_live {
	struct hmap *blocks;  /* (pid << 16 | device, addr) -> struct mem_block */
	struct hmap *devs;    /* (pid << 16 | device, 0) -> struct mem_dev */
	struct hmap *deleted; /* (pid, tid) -> the address its last CPU Delete freed */
};

static __u64 pid_dev(__u32 pid, __s16 device)
{
	return (__u64)pid << 16 | (__u16)device;
}

struct mem_live *mem_live__new(void)
{
	struct mem_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->blocks = hmap__new(sizeof(struct mem_block));
	l->devs = hmap__new(sizeof(struct mem_dev));
	l->deleted = hmap__new(sizeof(__u64));
	if (!l->blocks || !l->devs || !l->deleted) {
		mem_live__free(l);
		return NULL;
	}
	return l;
}

void mem_live__free(struct mem_live *l)
{
	if (!l)
		return;
	hmap__free(l->blocks);
	hmap__free(l->devs);
	hmap__free(l->deleted);
	free(l);
}

/*
 * A CPU free's bookkeeping: 1 when R is the report of the free its thread's Delete just wrote
 * (bpf/mem.bpf.c keeps those whose reporter's total fell to 0), to be left out. A CPU block
 * lives at one address at a time: a report of an address no block holds was either that, or
 * a map made before the recording (which counts the size it says).
 */
static int delete_echo(struct mem_live *l, const struct bs_mem_alloc *r, int live)
{
	struct hkey k = { r->h.pid, r->h.tid };
	__u64 *last;

	if (r->device != BS_MEM_DEV_CPU)
		return 0;
	if (r->source == BS_MEM_SRC_CPU) {
		last = hmap__get(l->deleted, k, 1);
		if (last)
			*last = r->addr;
		return 0;
	}
	if (live || !(last = hmap__get(l->deleted, k, 0)) || *last != r->addr)
		return 0;
	*last = 0;
	return 1;
}

__u64 mem_live__apply(struct mem_live *l, const struct bs_mem_alloc *r, __u32 site,
		      struct mem_block *freed)
{
	__u64 pd = pid_dev(r->h.pid, r->device);
	struct hkey bk = { pd, r->addr };
	struct mem_block *b;
	struct mem_dev *d;
	__u64 bytes;

	if (r->flags & BS_MEM_FREE) {
		b = hmap__get(l->blocks, bk, 0);
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
		hmap__del(l->blocks, bk);
		d = hmap__get(l->devs, (struct hkey){ pd, 0 }, 0);
		if (d)
			d->live = d->live > bytes ? d->live - bytes : 0;
		return bytes;
	}
	if (!r->bytes)
		return 0;
	d = hmap__get(l->devs, (struct hkey){ pd, 0 }, 1);
	b = hmap__get(l->blocks, bk, 1);
	if (!b || !d)
		return r->bytes; /* out of memory: counted, not kept */
	if (b->bytes)		 /* the same address again without its free (a lost record) */
		d->live = d->live > b->bytes ? d->live - b->bytes : 0;
	b->bytes = r->bytes;
	b->ts = r->h.ts;
	b->tid = r->h.tid;
	b->site = site;
	b->stream = b->requested = 0;
	d->live += r->bytes;
	if (d->live > d->peak) {
		d->peak = d->live;
		d->peak_ts = r->h.ts;
	}
	return r->bytes;
}

void mem_live__stream(struct mem_live *l, const struct bs_mem_stream *r)
{
	struct mem_block *b =
		hmap__get(l->blocks, (struct hkey){ pid_dev(r->h.pid, r->device), r->addr }, 0);

	if (b) {
		b->stream = r->stream;
		b->requested = r->requested;
	}
}

const struct mem_block *mem_live__get(const struct mem_live *l, __u32 pid, __s16 device, __u64 addr)
{
	return hmap__get(l->blocks, (struct hkey){ pid_dev(pid, device), addr }, 0);
}

const struct mem_dev *mem_live__dev(const struct mem_live *l, __u32 pid, __s16 device)
{
	return hmap__get(l->devs, (struct hkey){ pid_dev(pid, device), 0 }, 0);
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

void mem_live__each(const struct mem_live *l, __u32 pid, __s16 device,
		    void (*fn)(void *arg, __u32 pid, __s16 device, __u64 addr,
			       const struct mem_block *b),
		    void *arg)
{
	const struct mem_block *b;
	struct hkey k;
	size_t it = 0;

	while ((b = hmap__next(l->blocks, &it, &k)))
		if (!pid || k.a == pid_dev(pid, device))
			fn(arg, k.a >> 16, (__s16)(__u16)k.a, k.b, b);
}

void mem_live__forget(struct mem_live *l, __u32 pid)
{
	const struct mem_block *b;
	struct hkey k;
	size_t it = 0, n = 0, cap = 0;
	struct hkey *dead = NULL;

	/* Keys of every device of PID: collected first, as deleting moves the others. */
	while ((b = hmap__next(l->blocks, &it, &k))) {
		if (k.a >> 16 != pid)
			continue;
		if (n == cap) {
			struct hkey *v = realloc(dead, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!v)
				break;
			dead = v;
		}
		dead[n++] = k;
	}
	for (size_t i = 0; i < n; i++)
		hmap__del(l->blocks, dead[i]);
	free(dead);
	hmap__del_all(l->deleted, 0, pid);
	for (int dev = -1; dev < 256; dev++) /* BS_MEM_DEV_CPU, then CUDA devices */
		hmap__del(l->devs, (struct hkey){ pid_dev(pid, dev), 0 });
}

__u64 mem_live__count(const struct mem_live *l)
{
	return hmap__count(l->blocks);
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
