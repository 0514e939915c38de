// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One process's device's caching-allocator segments, derived from its reports (mem_segments.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "mem_segments.h"

struct mem_segs {
	struct mem_seg *v; /* by address, never overlapping */
	size_t n, cap;
	__u64 reserved; /* the device's reserved bytes as last said */
	int known;	/* a record with totals came */
};

__u64 mem_segs__round(__u64 bytes)
{
	if (bytes <= MEM_SMALL_SIZE)
		return 2ull << 20; /* kSmallBuffer */
	if (bytes < 10ull << 20)
		return 20ull << 20; /* kLargeBuffer, below kMinLargeAlloc */
	return (bytes + (2ull << 20) - 1) & ~((2ull << 20) - 1); /* kRoundLarge */
}

struct mem_segs *mem_segs__new(void)
{
	return calloc(1, sizeof(struct mem_segs));
}

void mem_segs__free(struct mem_segs *g)
{
	if (g)
		free(g->v);
	free(g);
}

/* The index of the first segment starting after ADDR (where one starting at ADDR goes). */
static size_t seg_after(const struct mem_segs *g, __u64 addr)
{
	size_t lo = 0, hi = g->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct mem_seg *seg_at(const struct mem_segs *g, __u64 addr)
{
	size_t i = seg_after(g, addr);

	if (!i || addr - g->v[i - 1].addr >= g->v[i - 1].size)
		return NULL;
	return &g->v[i - 1];
}

const struct mem_seg *mem_segs__find(const struct mem_segs *g, __u64 addr)
{
	return seg_at(g, addr);
}

void mem_segs__stream(struct mem_segs *g, __u64 addr, __u64 stream)
{
	struct mem_seg *s = seg_at(g, addr);

	if (s)
		s->stream = stream;
}

const struct mem_seg *mem_segs__at(const struct mem_segs *g, size_t i)
{
	return i < g->n ? &g->v[i] : NULL;
}

static struct mem_seg *seg_insert(struct mem_segs *g, const struct mem_seg *s)
{
	size_t i = seg_after(g, s->addr);

	/* from 16: segments per process and device, many processes with few */
	if (array__grow_from((void **)&g->v, g->n, &g->cap, sizeof(*g->v), 16))
		return NULL;
	memmove(&g->v[i + 1], &g->v[i], (g->n - i) * sizeof(*g->v));
	g->v[i] = *s;
	g->n++;
	return &g->v[i];
}

static void seg_remove(struct mem_segs *g, struct mem_seg *s)
{
	size_t i = s - g->v;

	memmove(&g->v[i], &g->v[i + 1], (g->n - i - 1) * sizeof(*g->v));
	g->n--;
}

/*
 * A block [ADDR, ADDR + BYTES) in a segment that predates the records: the segment known by
 * its blocks grows to hold it, with the ones it now touches. 0 or -ENOMEM.
 */
static int seg_predating(struct mem_segs *g, __u64 addr, __u64 bytes, const struct mem_seg *tmpl)
{
	size_t i = seg_after(g, addr);
	struct mem_seg *s, *next;
	__u64 end = addr + bytes;

	if (i && !g->v[i - 1].made && g->v[i - 1].addr + g->v[i - 1].size >= addr) {
		s = &g->v[i - 1];
	} else {
		struct mem_seg n = *tmpl;

		n.addr = addr;
		n.size = bytes;
		n.made = 0;
		if (!(s = seg_insert(g, &n)))
			return -ENOMEM;
	}
	if (end > s->addr + s->size)
		s->size = end - s->addr;
	/* The hull may reach the next ones known the same way: one segment. */
	while ((size_t)(s - g->v) + 1 < g->n && !(next = s + 1)->made &&
	       next->addr <= s->addr + s->size) {
		if (next->addr + next->size > s->addr + s->size)
			s->size = next->addr + next->size - s->addr;
		s->blocks += next->blocks;
		seg_remove(g, next);
	}
	return 0;
}

static int cmp_size_desc(const void *a, const void *b)
{
	const struct mem_seg *x = *(struct mem_seg *const *)a, *y = *(struct mem_seg *const *)b;

	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/*
 * The free segments GONE bytes of reserved released, the largest that fit first, as their
 * addresses into *PICKED (the caller frees it): how many, and the bytes they leave unexplained
 * in *LEFT. -ENOMEM.
 */
static int seg_pick(const struct mem_segs *g, __u64 gone, __u64 **picked, __u64 *left)
{
	const struct mem_seg **c = malloc((g->n + 1) * sizeof(*c));
	size_t nc = 0, n = 0;

	*picked = malloc((g->n + 1) * sizeof(**picked));
	if (!c || !*picked) {
		free(c);
		free(*picked);
		*picked = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->n; i++)
		if (!g->v[i].blocks)
			c[nc++] = &g->v[i];
	qsort(c, nc, sizeof(*c), cmp_size_desc);
	for (size_t i = 0; i < nc && gone; i++) {
		if (c[i]->size > gone)
			continue;
		gone -= c[i]->size;
		(*picked)[n++] = c[i]->addr;
	}
	free(c);
	*left = gone;
	return (int)n;
}

/* The segments at PICKED[N] released: FN told, then they go. */
static int seg_release(struct mem_segs *g, const __u64 *picked, int n, mem_seg_fn fn, void *arg)
{
	struct mem_seg *s;
	int err = 0;

	for (int i = 0; i < n && !err; i++) {
		if (!(s = seg_at(g, picked[i])))
			continue;
		err = fn(arg, MEM_SEG_FREE, s);
		seg_remove(g, s);
	}
	return err;
}

/* Reserved fell by GONE: the free segments it released (what fits; the rest is unseen). */
static int seg_shrink(struct mem_segs *g, __u64 gone, mem_seg_fn fn, void *arg)
{
	__u64 *picked, left;
	int n = seg_pick(g, gone, &picked, &left), err;

	if (n < 0)
		return n;
	err = seg_release(g, picked, n, fn, arg);
	free(picked);
	return err;
}

/*
 * An allocation of BYTES outside every segment that grew reserved by less than it (D): when
 * the free segments released to make room account exactly for a new segment of the
 * allocator's size for it, they go, and the segment's size is returned; else 0.
 */
static __u64 seg_remade(struct mem_segs *g, __u64 bytes, __s64 d, mem_seg_fn fn, void *arg,
			int *err)
{
	__u64 size = mem_segs__round(bytes), *picked, left;
	int n;

	*err = 0;
	if ((__s64)size <= d)
		return 0;
	n = seg_pick(g, size - d, &picked, &left);
	if (n < 0) {
		*err = n;
		return 0;
	}
	if (!left && n)
		*err = seg_release(g, picked, n, fn, arg);
	free(picked);
	return !left && n && !*err ? size : 0;
}

/* The device's reserved bytes are RESERVED now: the change since the last said. */
static __s64 reserved_delta(struct mem_segs *g, __u64 reserved)
{
	__s64 d = (__s64)(reserved - g->reserved);

	g->reserved = reserved;
	return d;
}

int mem_segs__reserved(struct mem_segs *g, __u64 reserved, mem_seg_fn fn, void *arg)
{
	__s64 d;

	if (!g->known) {
		g->known = 1;
		g->reserved = reserved;
	}
	d = reserved_delta(g, reserved);
	return d < 0 ? seg_shrink(g, (__u64)-d, fn, arg) : 0;
}

int mem_segs__apply(struct mem_segs *g, const struct bs_mem_alloc *r, __u64 bytes, __u32 stack,
		    mem_seg_fn fn, void *arg)
{
	int is_free = r->flags & BS_MEM_FREE, err = 0;
	struct mem_seg tmpl = {
		.stack = stack,
		.small = bytes <= MEM_SMALL_SIZE,
	};
	struct mem_seg *s = bytes ? seg_at(g, r->addr) : NULL;
	__s64 d = 0;

	if (r->flags & BS_MEM_TOTALS) {
		/*
		 * The first report of the device: reserved before it is known only when it is
		 * the device's first block and reserved is no more than one segment for it.
		 */
		if (!g->known) {
			g->known = 1;
			g->reserved = r->reserved;
			if (!is_free && !s && r->allocated == bytes && r->reserved >= bytes &&
			    r->reserved <= mem_segs__round(bytes))
				g->reserved = 0;
		}
		d = reserved_delta(g, r->reserved);
	}
	if (!is_free && bytes && !s && r->flags & BS_MEM_TOTALS) {
		/* A new segment: the growth, or what a release made room for (emptyCache). */
		tmpl.size = d >= (__s64)bytes ? (__u64)d : seg_remade(g, bytes, d, fn, arg, &err);
		if (err)
			return err;
		if (tmpl.size) {
			tmpl.addr = r->addr;
			tmpl.made = 1;
			tmpl.blocks = 1;
			if (!seg_insert(g, &tmpl))
				return -ENOMEM;
			return fn(arg, MEM_SEG_ALLOC, &tmpl);
		}
	}
	if (d < 0 && (err = seg_shrink(g, (__u64)-d, fn, arg)))
		return err;
	if (!bytes)
		return 0;
	s = seg_at(g, r->addr);
	if (s && s->made && r->addr + bytes > s->addr + s->size)
		s->size = r->addr + bytes - s->addr; /* past its segment's end: the growth misled */
	else if ((!s || r->addr + bytes > s->addr + s->size) &&
		 (err = seg_predating(g, r->addr, bytes, &tmpl)))
		return err;
	s = seg_at(g, r->addr);
	if (s && !is_free)
		s->blocks++;
	else if (s && s->blocks)
		s->blocks--;
	return 0;
}
