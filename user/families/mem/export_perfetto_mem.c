// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family's counters in the Perfetto export (docs/EXPORT.md, "Memory"): per process,
 * counter tracks in bytes
 *   "DEVICE allocated"  per device (cpu, cuda:N): the CUDA caching allocator's own total
 *                       after each allocation and free where its reports give it
 *                       (torch.cuda.memory_allocated()), else the bytes live by the records
 *                       (mem_live.h: CPU tensors);
 *   "cuda:N reserved"   what the caching allocator holds from CUDA (memory_reserved());
 *   "RSS"               the process's resident memory, from its mem_rss records.
 * A value is written where it changes. The allocations, frees and OOMs themselves are instants
 * on their threads, drawn by their style, with their sizes and stacks in their arguments.
 * Memory: a counter track per process and device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_perfetto.h"
#include "hmap.h"
#include "mem.h"
#include "mem_walk.h"

enum mem_ctr { CTR_ALLOCATED, CTR_RESERVED, CTR_RSS };

struct pf_mem_ctr {
	__u64 uuid; /* 0: not described yet */
	__u64 last;
};

static int mem_open(struct pf *pf, void **st)
{
	*st = hmap__new(sizeof(struct pf_mem_ctr)); /* {pid, device << 8 | counter} */
	return *st ? 0 : -ENOMEM;
}

static void mem_free(void *st)
{
	hmap__free(st);
}

static void ctr_describe(enum mem_ctr which, __s16 device, char *name, size_t nlen, char *desc,
			 size_t dlen)
{
	char dev[16];

	mem_device_name(device, dev, sizeof(dev));
	switch (which) {
	case CTR_ALLOCATED:
		snprintf(name, nlen, "%s allocated", dev);
		if (device == BS_MEM_DEV_CPU)
			snprintf(
				desc, dlen,
				"Bytes of PyTorch CPU tensors live in this process: its allocations "
				"less its frees since the recording began (mem family).");
		else
			snprintf(desc, dlen,
				 "Bytes the CUDA caching allocator had allocated on %s for this "
				 "process after each allocation and free, as its reports say "
				 "(torch.cuda.memory_allocated(); mem family).",
				 dev);
		break;
	case CTR_RESERVED:
		snprintf(name, nlen, "%s reserved", dev);
		snprintf(
			desc, dlen,
			"Bytes the CUDA caching allocator held from CUDA on %s for this process: "
			"what is allocated and its cache (torch.cuda.memory_reserved(); mem family).",
			dev);
		break;
	case CTR_RSS:
		snprintf(name, nlen, "RSS");
		snprintf(desc, dlen,
			 "Resident memory of the process (anonymous, file and shared-memory pages, "
			 "VmRSS), recorded where it moved by --mem-step (mem family).");
		break;
	}
}

/* Counter WHICH of PID's DEVICE at TS: V, written when it changed. */
static int ctr_set(struct pf *pf, struct hmap *ctrs, __u32 pid, __s16 device, enum mem_ctr which,
		   __u64 ts, __u64 v)
{
	struct hkey k = { pid, (__u64)(__u16)device << 8 | which };
	struct pf_mem_ctr *c = hmap__get(ctrs, k, 1);
	char name[48], desc[256];
	__u64 proc;
	int err;

	if (!c)
		return -ENOMEM;
	if (c->uuid && c->last == v)
		return 0;
	if (!c->uuid) {
		c->uuid = pf->next_uuid++;
		err = pf__process_track(pf, pid, ts, pf->model, &proc);
		if (err)
			return err;
		ctr_describe(which, device, name, sizeof(name), desc, sizeof(desc));
		err = pf__describe_counter(pf, ts, c->uuid, proc, name, desc, CD_UNIT_BYTES);
		if (err)
			return err;
	}
	c->last = v;
	return pf__counter(pf, ts, c->uuid, (__s64)v, NULL);
}

static int mem_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	const struct bs_mem_alloc *a = (const void *)rec;
	const struct bs_mem_oom *o = (const void *)rec;
	const struct mem_walk *w;
	int err = 0;

	if (rec->type == BS_REC_MEM_ALLOC && rec->size >= sizeof(*a)) {
		w = mem_walk__of(pf->model, rec);
		if (a->flags & BS_MEM_TOTALS)
			err = ctr_set(pf, st, rec->pid, a->device, CTR_ALLOCATED, rec->ts,
				      a->allocated);
		else if (w)
			err = ctr_set(pf, st, rec->pid, a->device, CTR_ALLOCATED, rec->ts,
				      w->last_live);
		if (!err && a->flags & BS_MEM_TOTALS)
			err = ctr_set(pf, st, rec->pid, a->device, CTR_RESERVED, rec->ts,
				      a->reserved);
	} else if (rec->type == BS_REC_MEM_OOM && rec->size >= sizeof(*o) &&
		   o->device != BS_MEM_DEV_CPU) {
		/* The totals when it failed: the allocator may have emptied its cache first. */
		err = ctr_set(pf, st, rec->pid, o->device, CTR_ALLOCATED, rec->ts, o->allocated);
		if (!err)
			err = ctr_set(pf, st, rec->pid, o->device, CTR_RESERVED, rec->ts,
				      o->reserved);
	} else if (rec->type == BS_REC_MEM_RSS && rec->size >= sizeof(struct bs_mem_rss)) {
		err = ctr_set(pf, st, rec->pid, 0, CTR_RSS, rec->ts,
			      ((const struct bs_mem_rss *)rec)->rss);
	}
	return err;
}

const struct perfetto_family mem_perfetto = {
	.open = mem_open,
	.free = mem_free,
	.observe = mem_observe,
};
