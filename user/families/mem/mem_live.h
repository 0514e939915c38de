/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The blocks live in each process and device as mem's records tell them, in file order: what
 * a free freed (the CPU's Delete and the USDT free do not say), how much is live, its peak.
 * Used by the decoders (the walk state), the reports, the exports and monitor alike, so every
 * view counts a block the same way, as torch.profiler counts it: a free of memory allocated
 * before the recording (or before a flight window, or outside --capture-range) counts the
 * size its record gives (the GPU's, a CPU map's), or 0 where it gives none (the CPU
 * allocator's: nothing anyone saw). The report a CPU Delete makes of its own free while
 * torch.profiler runs, which BPF cannot always tell from a map's, counts 0 (mem_live.c).
 */
#ifndef BPFSIGHT_MEM_LIVE_H
#define BPFSIGHT_MEM_LIVE_H

#include <stddef.h>
#include <linux/types.h>
#include "mem_records.h"

struct mem_live;
struct hmap;

/* What is kept of a live block: its allocation's record, as the caller tags it. */
struct mem_block {
	__u64 bytes;
	__u64 ts;
	__u32 tid;
	__u32 site;	 /* the caller's: an allocation site, a stack id */
	__u64 stream;	 /* a GPU block's (MEM_STREAM), else 0 */
	__u64 requested; /* bytes asked for (MEM_STREAM), else 0: bytes */
};

/* A process's device: its live bytes by the records, their peak and when. */
struct mem_dev {
	__u64 live, peak, peak_ts;
};

/*
 * What allocation R counts for at its site, in blocks of its size (mem_records.h's
 * sample_rate): 1 for a block whose stack was taken for its size, one recorded without
 * sampling, and one made before stacks were taken (BS_MEM_EARLY: a site of its own);
 * 1 / (1 - exp(-bytes / rate)) for one sampled, the inverse of its chance to be; 0 for one
 * not sampled, which the sampled ones stand for.
 */
double mem_alloc__weight(const struct bs_mem_alloc *r);

struct mem_live *mem_live__new(void);
void mem_live__free(struct mem_live *l);
/*
 * Apply the allocation or free R (SITE tags an allocation's block). Returns the bytes the
 * record allocated or freed: a free's from its allocation (unseen: its record's), its block into
 * *FREED when not NULL. 0, with nothing changed, for a record of 0 bytes and for a Delete's
 * own report.
 */
__u64 mem_live__apply(struct mem_live *l, const struct bs_mem_alloc *r, __u32 site,
		      struct mem_block *freed);
/* A MEM_STREAM record: its stream and requested size go to the live block at its address. */
void mem_live__stream(struct mem_live *l, const struct bs_mem_stream *r);
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
/* What a process holds on a device after one of its allocations or frees. */
struct mem_held {
	__u64 allocated; /* bytes of live tensors */
	__u64 reserved;	 /* what the caching allocator holds from the device (has_reserved) */
	__u8 has_reserved;
};

/*
 * What R's process holds on R's device after R (applied): the allocator's own totals where R
 * carries them (BS_MEM_TOTALS, the GPU's: blocks allocated before the recording included),
 * else the live bytes by the records (the CPU's, which has no cache: nothing reserved).
 */
void mem_live__held(const struct mem_live *l, const struct bs_mem_alloc *r, struct mem_held *h);
/* PID exited: its blocks and devices go (their peaks with them), and nothing else is read. */
void mem_live__forget(struct mem_live *l, __u32 pid);
/* How many blocks are live, in every process. */
__u64 mem_live__count(const struct mem_live *l);
/* How many blocks, devices and Deletes were not kept for want of memory (said once). */
__u64 mem_live__unkept(const struct mem_live *l);

/* What a view does with mem's records and the lives of processes (each hook may be NULL). */
enum mem_gone { MEM_GONE_EXIT, MEM_GONE_EXEC, MEM_GONE_RECYCLED };

struct mem_visit {
	void (*alloc)(void *arg, const struct bs_mem_alloc *r);
	void (*rss)(void *arg, __u32 pid, __u64 ts, __u64 rss); /* MEM_RSS, _GROW, _SHRINK */
	void (*oom)(void *arg, const struct bs_mem_oom *r);
	/*
	 * What PID held is gone: it exited (the last of its threads), a new program replaced it
	 * (exec), or a new process has its pid (a fork whose process's exit went unseen).
	 */
	void (*gone)(void *arg, __u32 pid, __u64 ts, enum mem_gone how);
};

/* REC to V's hook, checked against its type's size first. */
void mem_visit(const struct mem_visit *v, void *arg, const struct bs_hdr *rec);

/*
 * A live view's state (monitor's metrics, top's columns): every process's live blocks, and a
 * map of its own of VAL_SIZE-byte values. mem_view__new makes it into *ST (an open hook's).
 */
struct mem_view {
	struct mem_live *live;
	struct hmap *map;
};

int mem_view__new(size_t val_size, void **st);
void mem_view__free(void *st);

#endif /* BPFSIGHT_MEM_LIVE_H */
