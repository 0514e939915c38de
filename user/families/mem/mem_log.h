/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every allocation a trace holds, with its site, its thread and when it was freed, in file
 * order: what mem_peak and mem_leaks read after the pass, when they know the moments that
 * matter (a device's peak, the steps' ends). A free's size and block come from the live-block
 * table (mem_live.h), so the log counts a block as every other view does; an allocation at an
 * address still live (its free lost) ends the block that was there. Each entry keeps its
 * stack, whose site a report chooses (mem_site.h, by its --group-by), and what it counts for
 * at that site (its weight: a sampled allocation stands for more). 48 bytes an allocation.
 */
#ifndef BPFSIGHT_MEM_LOG_H
#define BPFSIGHT_MEM_LOG_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct hmap;
struct mem_live;
struct trace_model;

#define MEM_LOG_LIVE 0xffffffffu /* mem_entry.free_seq of a block never freed */

struct mem_entry {
	__u64 ts;      /* its allocation */
	__u64 free_ts; /* its free; unset while free_seq is MEM_LOG_LIVE */
	__u64 bytes;
	__u32 free_seq; /* entries made before its free: it was live after entry i < free_seq */
	__u32 stack;	/* its stack's id (mem_site.h), 0 none, MEM_SITE_STACK_EARLY */
	__u32 tid;
	__u32 dev;    /* its process's device: mem_log.devs[dev] */
	float weight; /* blocks it counts for at its site (mem_alloc__weight); 0: none */
};

/* ENTRY's bytes at its site: its own, or what its sample stands for. */
static inline double mem_entry__bytes(const struct mem_entry *e)
{
	return (double)e->bytes * e->weight;
}

/* A process's device, as the log saw it. */
struct mem_log_dev {
	__u32 pid;
	__s16 device;
	__u64 peak, peak_ts;	 /* its live bytes' peak by the records, and when it was reached */
	__u32 peak_entry;	 /* the allocation that reached it */
	__u64 first_ts, last_ts; /* its first and last allocation or free */
	__u64 early_ts;		 /* its last allocation made before stacks were taken (EARLY) */
	int exited;	  /* its process exited in the trace (what it kept, it freed or lost) */
	__u64 allocs;	  /* its entries */
	__u64 peak_total; /* the allocator's own allocated total at its highest (BS_MEM_TOTALS) */
};

struct mem_log {
	struct mem_entry *v;
	size_t n, cap;
	struct mem_log_dev *devs;
	size_t ndevs, cap_devs;
	struct mem_live *live;
	struct hmap *dev_of; /* (pid, device) -> index + 1 into devs */
	int err;	     /* -ENOMEM: the log stopped there */
};

struct mem_log *mem_log__new(void);
void mem_log__free(struct mem_log *l);
/* Take REC if it is an allocation or a free, or the exit of a process (other records: nothing). */
void mem_log__add(struct mem_log *l, const struct bs_hdr *rec, const struct trace_model *m);

#endif /* BPFSIGHT_MEM_LOG_H */
