// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family's metrics. Per process and device: the bytes its tensors hold (allocated:
 * the allocator's own totals where its records carry them, the GPU's; else the blocks the
 * records left live, mem_live.h: the CPU's), what the caching allocator reserved, the
 * process's resident memory (device "cpu"), and the peak of each since the monitor first saw
 * it; its allocations, frees and OOMs counted.
 *
 * Bytes are a process's own, kept whoever owns series (metrics__proc_series); pid="other"
 * shows the sum of the processes without series of their own, and no peak (the peak of a sum
 * whose members come and go says nothing). A process holds nothing once it exited: its bytes
 * go at its exit (an exec starts them over), its peaks and counters stay for the grace as
 * every series does. What is kept per process (its live blocks, its devices) goes with it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem.h"
#include "mem_live.h"
#include "metrics_family.h"

enum { ALLOCATED, RESERVED, RSS, NKINDS };

static const char *const kind_names[NKINDS] = { "allocated", "reserved", "rss" };

/* One device of a series: the resident memory is the "cpu" device's. */
struct mem_dev_series {
	__u64 allocs, frees, ooms; /* counters, in the series the events go to */
	__u64 now[NKINDS];	   /* bytes held now: the process's own series */
	__u64 peak[NKINDS];
	__u8 held[NKINDS]; /* now[] is known (and the process alive) */
	__u8 seen[NKINDS]; /* peak[] is */
};

struct mem_series {
	struct hmap *devs;   /* {device, 0} -> mem_dev_series */
	struct mem_view *mm; /* a process's own series: the index it is in */
	__u32 pid;
};

/* Its state (mem_view): the live blocks; {pid, 0} -> struct mem_series *, processes with bytes. */
static int mem_metrics_open(const struct record_opts *o, void **st)
{
	return mem_view__new(sizeof(struct mem_series *), st);
}

/* PID holds nothing any more, for good: out of the index, its blocks gone. */
static void forget(struct mem_view *mm, __u32 pid)
{
	if (!hmap__get(mm->map, (struct hkey){ pid, 0 }, 0))
		return;
	hmap__del(mm->map, (struct hkey){ pid, 0 });
	mem_live__forget(mm->live, pid);
}

/* The monitor drops a series (a process gone past the grace, a recycled pid, the end). */
static void mem_series_free(void *counters)
{
	struct mem_series *s = counters;
	struct mem_series **in;

	if (s->mm && (in = hmap__get(s->mm->map, (struct hkey){ s->pid, 0 }, 0)) && *in == s)
		forget(s->mm, s->pid);
	hmap__free(s->devs);
}

static struct mem_dev_series *dev_of(struct mem_series *s, __s16 device)
{
	return s ? m_map__at(&s->devs, sizeof(struct mem_dev_series),
			     (struct hkey){ (__u16)device, 0 })
		 : NULL;
}

/*
 * PID's own series, in the index of processes holding bytes. NULL without memory, or when PID
 * exited (a record late after its exit brings nothing back).
 */
static struct mem_series *own(struct metrics *m, struct mem_view *mm, __u32 pid)
{
	struct mem_series *s = metrics__proc_series(m, &family_mem, pid), **in;

	if (!s || s->mm)
		return s && hmap__get(mm->map, (struct hkey){ pid, 0 }, 0) ? s : NULL;
	in = hmap__get(mm->map, (struct hkey){ pid, 0 }, 1);
	if (!in)
		return NULL;
	*in = s;
	s->mm = mm;
	s->pid = pid;
	return s;
}

static void set(struct mem_dev_series *d, int kind, __u64 bytes)
{
	if (!d)
		return;
	d->now[kind] = bytes;
	d->held[kind] = 1;
	if (!d->seen[kind] || bytes > d->peak[kind])
		d->peak[kind] = bytes;
	d->seen[kind] = 1;
}

/* PID's bytes are gone (an exit, an exec: its blocks with them); the peaks stay. */
static void drop_bytes(struct mem_view *mm, __u32 pid)
{
	struct mem_series **in = hmap__get(mm->map, (struct hkey){ pid, 0 }, 0);
	struct mem_dev_series *d;
	size_t it = 0;

	if (!in)
		return;
	while ((d = hmap__next((*in)->devs, &it, NULL)))
		for (int k = 0; k < NKINDS; k++)
			d->now[k] = d->held[k] = 0;
}

/* A record's hooks' argument: the metrics, and mem's state. */
struct ctx {
	struct metrics *m;
	struct mem_view *mm;
};

static void on_alloc(void *arg, const struct bs_mem_alloc *r)
{
	struct ctx *c = arg;
	struct mem_dev_series *d;
	struct mem_held held;
	struct mem_series *s;

	if ((d = dev_of(metrics__series(c->m, &family_mem, r->h.pid, 1), r->device))) {
		if (r->flags & BS_MEM_FREE)
			d->frees++;
		else
			d->allocs++;
	}
	mem_live__apply(c->mm->live, r, 0, NULL);
	if (!(s = own(c->m, c->mm, r->h.pid)) || !(d = dev_of(s, r->device)))
		return;
	mem_live__held(c->mm->live, r, &held);
	set(d, ALLOCATED, held.allocated);
	if (held.has_reserved)
		set(d, RESERVED, held.reserved);
}

static void on_oom(void *arg, const struct bs_mem_oom *r)
{
	struct ctx *c = arg;
	struct mem_dev_series *d =
		dev_of(metrics__series(c->m, &family_mem, r->h.pid, 1), r->device);

	if (d)
		d->ooms++;
	/* The GPU's report says what the allocator held when it refused. */
	if (r->device != BS_MEM_DEV_CPU && (d = dev_of(own(c->m, c->mm, r->h.pid), r->device))) {
		set(d, ALLOCATED, r->allocated);
		set(d, RESERVED, r->reserved);
	}
}

/* Resident memory: an event of the process too, so that one doing nothing else owns series. */
static void on_rss(void *arg, __u32 pid, __u64 ts, __u64 rss)
{
	struct ctx *c = arg;

	metrics__series(c->m, &family_mem, pid, 1);
	set(dev_of(own(c->m, c->mm, pid), BS_MEM_DEV_CPU), RSS, rss);
}

/* An exit or an exec: its bytes go; after an exit, for good. A recycled pid's series is new. */
static void on_gone(void *arg, __u32 pid, __u64 ts, enum mem_gone how)
{
	struct ctx *c = arg;

	if (how == MEM_GONE_RECYCLED)
		return; /* the monitor dropped the old process's series: mem_series_free */
	drop_bytes(c->mm, pid);
	if (how == MEM_GONE_EXIT)
		forget(c->mm, pid);
	else
		mem_live__forget(c->mm->live, pid);
}

static const struct mem_visit metrics_visit = {
	.alloc = on_alloc,
	.rss = on_rss,
	.oom = on_oom,
	.gone = on_gone,
};

static void mem_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	struct ctx c = { m, st };

	mem_visit(&metrics_visit, &c, h);
}

/* device="cpu", or a CUDA device's index as bpfsight_gpu_* label it. */
static void device_label(FILE *f, __u64 key)
{
	__s16 device = (__s16)(__u16)key;

	if (device == BS_MEM_DEV_CPU)
		fputs("device=\"cpu\"", f);
	else
		fprintf(f, "device=\"%d\"", device);
}

static void line(FILE *f, const char *name, const struct metrics_owner *o, __u64 dev,
		 const char *kind, __u64 v)
{
	fprintf(f, "%s{", name);
	metrics__owner_labels(f, o);
	fputc(',', f);
	device_label(f, dev);
	if (kind)
		fprintf(f, ",kind=\"%s\"", kind);
	fprintf(f, "} %llu\n", (unsigned long long)v);
}

/* pid="other": the bytes of the processes holding some without series of their own. */
static struct hmap *other_bytes(struct mem_view *mm, const struct metrics_owner *ow, size_t n)
{
	struct hmap *owned = hmap__new(1), *sums = hmap__new(sizeof(__u64));
	struct mem_series **in, *s;
	const struct mem_dev_series *d;
	struct hkey k;
	size_t it = 0, dit;
	__u64 *sum;

	if (!owned || !sums)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if ((s = metrics_owner__series(&ow[i], &family_mem)) &&
		    !hmap__get(owned, (struct hkey){ (uintptr_t)s, 0 }, 1))
			goto fail;
	while ((in = hmap__next(mm->map, &it, NULL))) {
		if (hmap__get(owned, (struct hkey){ (uintptr_t)*in, 0 }, 0))
			continue;
		for (dit = 0; (d = hmap__next((*in)->devs, &dit, &k));)
			for (int kind = 0; kind < NKINDS; kind++) {
				if (!d->held[kind])
					continue;
				if (!(sum = hmap__get(sums, (struct hkey){ k.a, kind }, 1)))
					goto fail;
				*sum += d->now[kind];
			}
	}
	hmap__free(owned);
	return sums;
fail:
	hmap__free(owned);
	hmap__free(sums);
	return NULL;
}

static void render_bytes(FILE *f, struct mem_view *mm, const struct metrics_owner *ow, size_t n)
{
	const struct mem_dev_series *d;
	const struct mem_series *s;
	struct hmap *other;
	const __u64 *sum;
	struct hkey k;
	size_t it;

	metrics__head(f, "bpfsight_memory_bytes", "gauge",
		      "Memory a process holds now, by device and kind: allocated (its live "
		      "tensors), reserved (what the CUDA caching allocator holds from the device), "
		      "rss (resident memory, device cpu).");
	for (size_t i = 0; i + 1 < n; i++) {
		if (!(s = metrics_owner__series(&ow[i], &family_mem)))
			continue;
		for (it = 0; (d = hmap__next(s->devs, &it, &k));)
			for (int kind = 0; kind < NKINDS; kind++)
				if (d->held[kind])
					line(f, "bpfsight_memory_bytes", &ow[i], k.a,
					     kind_names[kind], d->now[kind]);
	}
	if (!(other = other_bytes(mm, ow, n)))
		return;
	for (it = 0; (sum = hmap__next(other, &it, &k));)
		line(f, "bpfsight_memory_bytes", &ow[n - 1], k.a, kind_names[k.b], *sum);
	hmap__free(other);
}

static void render_peaks(FILE *f, const struct metrics_owner *ow, size_t n)
{
	const struct mem_dev_series *d;
	const struct mem_series *s;
	struct hkey k;

	metrics__head(f, "bpfsight_memory_peak_bytes", "gauge",
		      "The highest bpfsight_memory_bytes of the process since the monitor saw it "
		      "first (kept after its exit, for the grace).");
	for (size_t i = 0; i + 1 < n; i++) {
		if (!(s = metrics_owner__series(&ow[i], &family_mem)))
			continue;
		for (size_t it = 0; (d = hmap__next(s->devs, &it, &k));)
			for (int kind = 0; kind < NKINDS; kind++)
				if (d->seen[kind])
					line(f, "bpfsight_memory_peak_bytes", &ow[i], k.a,
					     kind_names[kind], d->peak[kind]);
	}
}

/* Counters of every device the series allocated on (from 0: increase() sees the first OOM). */
static void render_counts(FILE *f, const struct metrics_owner *ow, size_t n, const char *name,
			  const char *help, size_t field)
{
	const struct mem_dev_series *d;
	const struct mem_series *s;
	struct hkey k;

	metrics__head(f, name, "counter", help);
	for (size_t i = 0; i < n; i++) {
		if (!(s = metrics_owner__series(&ow[i], &family_mem)))
			continue;
		for (size_t it = 0; (d = hmap__next(s->devs, &it, &k));)
			if (d->allocs || d->frees || d->ooms)
				line(f, name, &ow[i], k.a, NULL,
				     *(const __u64 *)((const char *)d + field));
	}
}

static void mem_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	render_bytes(f, st, ow, n);
	render_peaks(f, ow, n);
	render_counts(f, ow, n, "bpfsight_memory_allocations_total",
		      "Tensor allocations, by device, as PyTorch's allocators reported them.",
		      offsetof(struct mem_dev_series, allocs));
	render_counts(f, ow, n, "bpfsight_memory_frees_total", "Tensor frees, by device.",
		      offsetof(struct mem_dev_series, frees));
	render_counts(f, ow, n, "bpfsight_memory_ooms_total",
		      "Allocations refused for want of memory (out of memory), by device.",
		      offsetof(struct mem_dev_series, ooms));
}

const struct metrics_family mem_metrics = {
	.series_size = sizeof(struct mem_series),
	.series_free = mem_series_free,
	.open = mem_metrics_open,
	.free = mem_view__free,
	.record = mem_metrics_record,
	.render = mem_metrics_render,
};
