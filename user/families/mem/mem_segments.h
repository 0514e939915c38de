/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CUDA caching allocator's segments (what it got from cudaMalloc) of one process's device,
 * as its reports let them be derived: the records give each block's address and size and the
 * device's reserved bytes after the call, not the segments. So:
 *   - an allocation outside every known segment that grew reserved by at least its size made
 *     a segment of that growth, starting at the block (the allocator carves a new segment's
 *     first block from its start); the device's first report counts from 0 reserved when its
 *     block is the only one allocated and reserved is at most one segment for it
 *     (mem_segs__round), else from what it says;
 *   - an allocation outside every known segment that did not is in a segment that predates
 *     the records: that segment is known by the blocks seen in it (their hull, adjacent ones
 *     together), with no segment_alloc of its own; so is a free of an unseen block;
 *   - reserved falling by D (emptyCache, an OOM's retry) released free segments: the largest
 *     free ones that fit in D, as release_cached_blocks frees whole free segments;
 *   - an allocation outside every segment that grew reserved by less than its size (a
 *     release came first, emptyCache seen only at the next report) made a segment of the
 *     allocator's size for it (mem_segs__round) when the free segments released account for
 *     exactly the difference; else its segment predates the records, as above.
 * Exact for the allocator's usual life (segments made by allocations the records saw, emptied
 * caches); approximate where one call both released and made segments, or where the totals
 * of several threads' reports interleave. Records without totals only place blocks.
 */
#ifndef BPFSIGHT_MEM_SEGMENTS_H
#define BPFSIGHT_MEM_SEGMENTS_H

#include <stddef.h>
#include <linux/types.h>
#include "mem_records.h"

#define MEM_SMALL_SIZE (1ull << 20) /* the allocator's kSmallSize: larger goes to big segments */

struct mem_seg {
	__u64 addr, size;
	__u64 stream; /* the stream of the block that made it (MEM_STREAM), 0 = not said */
	__u32 stack;  /* that block's stack id, 0 = none */
	__u32 blocks; /* blocks allocated in it now */
	__u8 made;    /* its segment_alloc is in the records; else it predates them */
	__u8 small;   /* the small-block pool's (its first block was at most MEM_SMALL_SIZE) */
};

enum mem_seg_event { MEM_SEG_ALLOC, MEM_SEG_FREE };

/* Called for each segment made or released, before the record's own effect: 0 or -errno. */
typedef int (*mem_seg_fn)(void *arg, enum mem_seg_event what, const struct mem_seg *s);

struct mem_segs;

/*
 * The segment the caching allocator's default settings make for a block of BYTES: 2 MiB for
 * the small pool, 20 MiB up to 10 MiB, else BYTES rounded up to 2 MiB.
 */
__u64 mem_segs__round(__u64 bytes);
struct mem_segs *mem_segs__new(void);
void mem_segs__free(struct mem_segs *g);
/*
 * The allocation or free R of the device, BYTES its size (a free's from its allocation), STACK
 * its stack id: the segments it made or released go to FN first. 0 or -ENOMEM.
 */
int mem_segs__apply(struct mem_segs *g, const struct bs_mem_alloc *r, __u64 bytes, __u32 stack,
		    mem_seg_fn fn, void *arg);
/* RESERVED said by another record of the device (an OOM's): the segments it released. */
int mem_segs__reserved(struct mem_segs *g, __u64 reserved, mem_seg_fn fn, void *arg);
/* The segment holding ADDR, or NULL. */
const struct mem_seg *mem_segs__find(const struct mem_segs *g, __u64 addr);
/* The segment at ADDR takes STREAM (MEM_STREAM: the block whose allocation made it). */
void mem_segs__stream(struct mem_segs *g, __u64 addr, __u64 stream);
/* The I-th segment by address, NULL past the last. */
const struct mem_seg *mem_segs__at(const struct mem_segs *g, size_t i);

#endif /* BPFSIGHT_MEM_SEGMENTS_H */
