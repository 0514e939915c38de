// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_sum: one row per (process, device): its peak allocated bytes (the allocator's own total
 * where its records carry one, the GPU's; else the peak of the live bytes the records tell,
 * mem_live.h), its peak reserved bytes (the CUDA caching allocator's), the allocations and
 * frees, the bytes allocated, the largest allocation, the allocations refused (OOMs), and on
 * the process's cpu row its peak resident memory (mem_rss), which a process has a row for
 * even without a tensor record.
 */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem.h"
#include "mem_live.h"
#include "mem_report.h"
#include "mem_site.h"
#include "table.h"

#define SUM_TENSORS 0x1 /* an allocation or free was seen */
#define SUM_TOTALS  0x2 /* the allocator's totals were */
#define SUM_RSS	    0x4 /* an RSS record was (the cpu row) */

struct sum_dev {
	__u64 allocs, frees, bytes, largest, ooms;
	__u64 peak_allocated, peak_reserved; /* SUM_TOTALS */
	__u64 peak_rss;			     /* SUM_RSS */
	__u32 flags;
};

struct sum_state {
	struct hmap *devs; /* (pid, (u16)device) -> struct sum_dev */
	struct mem_live *live;
};

static void *sum__new(void)
{
	struct sum_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->devs = hmap__new(sizeof(struct sum_dev));
	st->live = mem_live__new();
	if (!st->devs || !st->live) {
		hmap__free(st->devs);
		mem_live__free(st->live);
		free(st);
		return NULL;
	}
	return st;
}

static void sum__free(void *vst)
{
	struct sum_state *st = vst;

	if (!st)
		return;
	hmap__free(st->devs);
	mem_live__free(st->live);
	free(st);
}

static struct sum_dev *dev_of(struct sum_state *st, __u32 pid, __s16 device)
{
	return hmap__get(st->devs, (struct hkey){ pid, (__u16)device }, 1);
}

static void totals(struct sum_dev *d, __u64 allocated, __u64 reserved)
{
	d->flags |= SUM_TOTALS;
	if (allocated > d->peak_allocated)
		d->peak_allocated = allocated;
	if (reserved > d->peak_reserved)
		d->peak_reserved = reserved;
}

static void add_alloc(struct sum_state *st, const struct bs_mem_alloc *r)
{
	struct sum_dev *d = dev_of(st, r->h.pid, r->device);
	__u64 bytes = mem_live__apply(st->live, r, 0, NULL);

	if (!d)
		return;
	d->flags |= SUM_TENSORS;
	if (r->flags & BS_MEM_TOTALS)
		totals(d, r->allocated, r->reserved);
	if (r->flags & BS_MEM_FREE) {
		d->frees++;
		return;
	}
	if (!bytes)
		return;
	d->allocs++;
	d->bytes += bytes;
	if (bytes > d->largest)
		d->largest = bytes;
}

static void sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct sum_state *st = vst;
	struct sum_dev *d;

	switch (rec->type) {
	case BS_REC_MEM_ALLOC:
		add_alloc(st, (const void *)rec);
		break;
	case BS_REC_MEM_OOM: {
		const struct bs_mem_oom *o = (const void *)rec;

		d = dev_of(st, rec->pid, o->device);
		if (!d)
			break;
		d->ooms++;
		if (o->device != BS_MEM_DEV_CPU) /* the CPU's say no totals */
			totals(d, o->allocated, o->reserved);
		break;
	}
	case BS_REC_MEM_RSS:
		d = dev_of(st, rec->pid, BS_MEM_DEV_CPU);
		if (!d)
			break;
		d->flags |= SUM_RSS;
		if (((const struct bs_mem_rss *)rec)->rss > d->peak_rss)
			d->peak_rss = ((const struct bs_mem_rss *)rec)->rss;
		break;
	}
}

struct sum_row {
	struct hkey key;
	const struct sum_dev *d;
};

static int by_pid_device(const void *a, const void *b)
{
	const struct sum_row *x = a, *y = b;

	if (x->key.a != y->key.a)
		return x->key.a < y->key.a ? -1 : 1;
	/* cpu ((u16)-1) after the CUDA devices would read oddly: cpu first. */
	return (int)(__s16)(__u16)x->key.b - (int)(__s16)(__u16)y->key.b;
}

static int sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_WHO,
		C_PEAK_ALLOCATED = C_WHO + MEM_WHO_NCOLS,
		C_PEAK_RESERVED,
		C_ALLOCS,
		C_FREES,
		C_ALLOCATED,
		C_LARGEST,
		C_OOMS,
		C_PEAK_RSS,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		MEM_WHO_COLS(C_WHO),
		[C_PEAK_ALLOCATED] = { "peak_allocated_bytes", "Peak Allocated (B)", TABLE_U64 },
		[C_PEAK_RESERVED] = { "peak_reserved_bytes", "Peak Reserved (B)", TABLE_U64 },
		[C_ALLOCS] = { "allocs", "Allocs", TABLE_U64 },
		[C_FREES] = { "frees", "Frees", TABLE_U64, TABLE_COL_MINOR },
		[C_ALLOCATED] = { "allocated_bytes", "Allocated (B)", TABLE_U64 },
		[C_LARGEST] = { "largest_bytes", "Largest (B)", TABLE_U64, TABLE_COL_MINOR },
		[C_OOMS] = { "ooms", "OOMs", TABLE_U64 },
		[C_PEAK_RSS] = { "peak_rss_bytes", "Peak RSS (B)", TABLE_U64 },
	};
	struct sum_state *st = vst;
	size_t n = hmap__count(st->devs), it = 0, i = 0;
	struct sum_row *rows = calloc(n + 1, sizeof(*rows));
	const struct sum_dev *d;
	struct hkey k;

	if (!rows)
		return -ENOMEM;
	while (i < n && (d = hmap__next(st->devs, &it, &k)))
		rows[i++] = (struct sum_row){ k, d };
	qsort(rows, n, sizeof(*rows), by_pid_device);
	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < n; i++) {
		__s16 device = (__s16)(__u16)rows[i].key.b;
		__u32 pid = (__u32)rows[i].key.a;
		const struct mem_dev *live = mem_live__dev(st->live, pid, device);

		d = rows[i].d;
		table__row(t);
		mem_who__set(t, C_WHO, m, pid, device);
		if (d->flags & SUM_TOTALS) {
			table__set_u64(t, C_PEAK_ALLOCATED, d->peak_allocated);
			table__set_u64(t, C_PEAK_RESERVED, d->peak_reserved);
		} else if (d->flags & SUM_TENSORS) {
			table__set_u64(t, C_PEAK_ALLOCATED, live ? live->peak : 0);
		}
		if (d->flags & SUM_TENSORS || d->ooms) { /* else a row for its RSS alone */
			table__set_u64(t, C_ALLOCS, d->allocs);
			table__set_u64(t, C_FREES, d->frees);
			table__set_u64(t, C_ALLOCATED, d->bytes);
			table__set_u64(t, C_LARGEST, d->largest);
			table__set_u64(t, C_OOMS, d->ooms);
		}
		if (d->flags & SUM_RSS)
			table__set_u64(t, C_PEAK_RSS, d->peak_rss);
	}
	free(rows);
	return table__err(t);
}

const struct report mem_sum = {
	.name = "mem_sum",
	.desc = "Memory per Process and Device: peaks, allocations, OOMs, peak RSS",
	.new = sum__new,
	.add = sum__add,
	.emit = sum__emit,
	.free = sum__free,
};
