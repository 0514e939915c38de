/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The blocks live in each process and device as mem's records tell them, in file order: what
 * a free freed (the CPU's Delete and the USDT free do not say), how much is live, its peak.
 * Used by the decoders (the walk state), the reports, the exports and monitor alike, so every
 * view counts a block the same way, as torch.profiler counts it: a free of memory allocated
 * before the recording (or before a flight window, or outside --capture-range) counts the
 * size its record gives (the GPU's), or 0 where it gives none (the CPU's: nothing anyone saw).
 */
#ifndef BPFSIGHT_MEM_LIVE_H
#define BPFSIGHT_MEM_LIVE_H

#include <linux/types.h>
#include "mem_records.h"

struct mem_live;

/* What is kept of a live block: its allocation's record, as the caller tags it. */
struct mem_block {
	__u64 bytes;
	__u64 ts;
	__u32 tid;
	__u32 site; /* the caller's: an allocation site, a stack id */
};

/* A process's device: its live bytes by the records, their peak and when. */
struct mem_dev {
	__u64 live, peak, peak_ts;
};

struct mem_live *mem_live__new(void);
void mem_live__free(struct mem_live *l);
/*
 * Apply the allocation or free R (SITE tags an allocation's block). Returns the bytes the
 * record allocated or freed: a free's from its allocation (unseen: its record's), its block into
 * *FREED when not NULL. 0, with nothing changed, for a record of 0 bytes.
 */
__u64 mem_live__apply(struct mem_live *l, const struct bs_mem_alloc *r, __u32 site,
		      struct mem_block *freed);
/* The block live at ADDR in PID's DEVICE, NULL when none is. */
const struct mem_block *mem_live__get(const struct mem_live *l, __u32 pid, __s16 device,
				      __u64 addr);
/* PID's DEVICE, NULL when it allocated nothing seen. */
const struct mem_dev *mem_live__dev(const struct mem_live *l, __u32 pid, __s16 device);
/* Call FN for every live block of PID's DEVICE (every process and device: pid 0). */
void mem_live__each(const struct mem_live *l, __u32 pid, __s16 device,
		    void (*fn)(void *arg, __u32 pid, __s16 device, __u64 addr,
			       const struct mem_block *b),
		    void *arg);
/* PID exited: its blocks and devices go (their peaks with them). */
void mem_live__forget(struct mem_live *l, __u32 pid);
/* How many blocks are live, in every process. */
__u64 mem_live__count(const struct mem_live *l);

#endif /* BPFSIGHT_MEM_LIVE_H */
