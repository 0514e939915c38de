// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family's columns in `bpfsight top`: what each process holds now (levels, on its
 * row; its threads' rows have none), as htop's RES and nvtop's GPU memory read it: its
 * resident memory, its live CPU tensors' bytes, its live GPU tensors' bytes and what its
 * CUDA caching allocator reserved (every device summed; nvtop's figure is that reserve plus
 * the CUDA context). Tensor bytes are mem_live.h's, as in every view.
 */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem.h"
#include "mem_live.h"
#include "top_family.h"

enum { RES, TENSORS, GPU_MEM, GPU_RSV, NCOLS };

static const struct top_column mem_columns[] = {
	[RES] = { "rss", "RES", "resident memory of the process (mem, to --mem-step)", TOP_LEVEL, 0,
		  5 },
	[TENSORS] = { "tensors", "TENSORS", "bytes of the process's live CPU tensors (mem)",
		      TOP_LEVEL, 0, 7 },
	[GPU_MEM] = { "gpu-mem", "GPU-MEM",
		      "bytes of its live GPU tensors, every device (mem: the caching allocator's)",
		      TOP_LEVEL, 0, 7 },
	[GPU_RSV] = { "gpu-rsv", "GPU-RSV",
		      "GPU memory its CUDA caching allocator reserved, every device (mem)",
		      TOP_LEVEL, 0, 7 },
	{ 0 },
};

/* What a process holds on one device ({pid, DEV_KEY(device)}), or on its GPUs ({pid, 0}). */
struct mem_top_held {
	__u64 allocated, reserved;
	__u32 cols; /* {pid, 0}: bit i, column i was set */
};

#define DEV_KEY(device) (1ull << 16 | (__u16)(device))

/* The state (mem_view): live blocks, and struct mem_top_held by {pid, DEV_KEY} and {pid, 0}. */
static int mem_top_open(const struct record_opts *o, void **st)
{
	return mem_view__new(sizeof(struct mem_top_held), st);
}

static void set(struct top *t, struct mem_view *mt, __u32 pid, int col, __u64 v)
{
	struct mem_top_held *p = hmap__get(mt->map, (struct hkey){ pid, 0 }, 1);

	if (p)
		p->cols |= 1u << col;
	top__set(t, &family_mem, col, pid, v);
}

/* PID's bytes on a GPU are now ALLOCATED and RESERVED: its columns sum every GPU's. */
static void set_gpu(struct top *t, struct mem_view *mt, __u32 pid, __s16 device,
		    const struct mem_held *h)
{
	struct hkey dk = { pid, DEV_KEY(device) }, pk = { pid, 0 };
	struct mem_top_held *d, *p, was;

	/* Made first, then looked up: making one may move the other. */
	if (!hmap__get(mt->map, dk, 1) || !hmap__get(mt->map, pk, 1))
		return;
	d = hmap__get(mt->map, dk, 0);
	p = hmap__get(mt->map, pk, 0);
	was = *d;
	d->allocated = h->allocated;
	p->allocated += h->allocated - was.allocated;
	if (h->has_reserved) {
		d->reserved = h->reserved;
		p->reserved += h->reserved - was.reserved;
	}
	was = *p;
	set(t, mt, pid, GPU_MEM, was.allocated);
	if (h->has_reserved || (was.cols & (1u << GPU_RSV)))
		set(t, mt, pid, GPU_RSV, was.reserved);
}

/* A record's hooks' argument: top, and mem's state. */
struct ctx {
	struct top *t;
	struct mem_view *mt;
};

static void on_alloc(void *arg, const struct bs_mem_alloc *r)
{
	struct ctx *c = arg;
	struct mem_held h;

	mem_live__apply(c->mt->live, r, 0, NULL);
	mem_live__held(c->mt->live, r, &h);
	if (r->device == BS_MEM_DEV_CPU)
		set(c->t, c->mt, r->h.pid, TENSORS, h.allocated);
	else
		set_gpu(c->t, c->mt, r->h.pid, r->device, &h);
}

static void on_rss(void *arg, __u32 pid, __u64 ts, __u64 rss)
{
	struct ctx *c = arg;

	set(c->t, c->mt, pid, RES, rss);
}

/* The GPU's OOM says what its allocator held when it refused. */
static void on_oom(void *arg, const struct bs_mem_oom *r)
{
	struct ctx *c = arg;

	if (r->device != BS_MEM_DEV_CPU)
		set_gpu(c->t, c->mt, r->h.pid, r->device,
			&(struct mem_held){ r->allocated, r->reserved, 1 });
}

/* PID's state goes; after an exec, what the old program held shows no more. */
static void on_gone(void *arg, __u32 pid, __u64 ts, enum mem_gone how)
{
	struct ctx *c = arg;
	const struct mem_top_held *p = hmap__get(c->mt->map, (struct hkey){ pid, 0 }, 0);
	__u32 cols = p ? p->cols : 0;

	if (!cols)
		return;
	mem_live__forget(c->mt->live, pid);
	hmap__del_all(c->mt->map, 0, pid);
	for (int col = 0; how == MEM_GONE_EXEC && col < NCOLS; col++)
		if (cols & (1u << col))
			top__set(c->t, &family_mem, col, pid, 0);
}

static const struct mem_visit top_visit = {
	.alloc = on_alloc,
	.rss = on_rss,
	.oom = on_oom,
	.gone = on_gone,
};

static void mem_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	struct ctx c = { t, st };

	mem_visit(&top_visit, &c, h);
}

const struct top_family mem_top = {
	.columns = mem_columns,
	.open = mem_top_open,
	.free = mem_view__free,
	.record = mem_top_record,
};
