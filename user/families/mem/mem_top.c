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

struct mem_top {
	struct mem_live *live;
	struct hmap *held; /* struct mem_top_held */
};

static int mem_top_open(const struct record_opts *o, void **st)
{
	struct mem_top *mt = calloc(1, sizeof(*mt));

	if (mt) {
		mt->live = mem_live__new();
		mt->held = hmap__new(sizeof(struct mem_top_held));
	}
	if (!mt || !mt->live || !mt->held) {
		if (mt) {
			mem_live__free(mt->live);
			hmap__free(mt->held);
		}
		free(mt);
		return -ENOMEM;
	}
	*st = mt;
	return 0;
}

static void mem_top_free(void *st)
{
	struct mem_top *mt = st;

	mem_live__free(mt->live);
	hmap__free(mt->held);
	free(mt);
}

static void set(struct top *t, struct mem_top *mt, __u32 pid, int col, __u64 v)
{
	struct mem_top_held *p = hmap__get(mt->held, (struct hkey){ pid, 0 }, 1);

	if (p)
		p->cols |= 1u << col;
	top__set(t, &family_mem, col, pid, v);
}

/* PID's bytes on a GPU are now ALLOCATED and RESERVED: its columns sum every GPU's. */
static void set_gpu(struct top *t, struct mem_top *mt, __u32 pid, __s16 device,
		    const struct mem_held *h)
{
	struct hkey dk = { pid, DEV_KEY(device) }, pk = { pid, 0 };
	struct mem_top_held *d, *p, was;

	/* Made first, then looked up: making one may move the other. */
	if (!hmap__get(mt->held, dk, 1) || !hmap__get(mt->held, pk, 1))
		return;
	d = hmap__get(mt->held, dk, 0);
	p = hmap__get(mt->held, pk, 0);
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

static void on_alloc(struct top *t, struct mem_top *mt, const struct bs_mem_alloc *r)
{
	struct mem_held h;

	mem_live__apply(mt->live, r, 0, NULL);
	mem_live__held(mt->live, r, &h);
	if (r->device == BS_MEM_DEV_CPU)
		set(t, mt, r->h.pid, TENSORS, h.allocated);
	else
		set_gpu(t, mt, r->h.pid, r->device, &h);
}

/* PID's state goes: it exited, or (NEW) a new program or process has its pid. */
static void forget(struct top *t, struct mem_top *mt, __u32 pid, int new)
{
	const struct mem_top_held *p = hmap__get(mt->held, (struct hkey){ pid, 0 }, 0);
	__u32 cols = p ? p->cols : 0;

	if (!cols)
		return;
	mem_live__forget(mt->live, pid);
	hmap__del_all(mt->held, 0, pid);
	for (int c = 0; new &&c < NCOLS; c++) /* what the old one held is not the new one's */
		if (cols & (1u << c))
			top__set(t, &family_mem, c, pid, 0);
}

static void mem_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	const struct bs_mem_oom *oom = (const void *)h;
	const struct bs_fork *f = (const void *)h;
	struct mem_top *mt = st;

	switch (h->type) {
	case BS_REC_MEM_ALLOC:
		if (h->size >= sizeof(struct bs_mem_alloc))
			on_alloc(t, mt, (const void *)h);
		break;
	case BS_REC_MEM_RSS:
		if (h->size >= sizeof(struct bs_mem_rss))
			set(t, mt, h->pid, RES, ((const struct bs_mem_rss *)h)->rss);
		break;
	case BS_REC_MEM_GROW:
		if (h->size >= sizeof(struct bs_mem_grow))
			set(t, mt, h->pid, RES, ((const struct bs_mem_grow *)h)->rss);
		break;
	case BS_REC_MEM_OOM: /* the GPU's says what its allocator held when it refused */
		if (h->size >= sizeof(*oom) && oom->device != BS_MEM_DEV_CPU)
			set_gpu(t, mt, h->pid, oom->device,
				&(struct mem_held){ oom->allocated, oom->reserved, 1 });
		break;
	case BS_REC_EXEC:
		forget(t, mt, h->pid, 1);
		break;
	case BS_REC_FORK:
		if (h->size >= sizeof(*f) && f->child_pid == f->child_tid)
			forget(t, mt, f->child_pid, 0); /* a recycled pid whose exit was lost */
		break;
	case BS_REC_EXIT:
		if (h->size >= sizeof(struct bs_exit) && ((const struct bs_exit *)h)->group_dead)
			forget(t, mt, h->pid, 0);
		break;
	}
}

const struct top_family mem_top = {
	.columns = mem_columns,
	.open = mem_top_open,
	.free = mem_top_free,
	.record = mem_top_record,
};
