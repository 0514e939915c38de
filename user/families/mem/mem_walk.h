/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * mem's walk state (struct family.walk_new): the live blocks as the file tells them, and what
 * the record just fed did, for its decoder: a free's size, the device's live bytes after it.
 */
#ifndef BPFSIGHT_MEM_WALK_H
#define BPFSIGHT_MEM_WALK_H

#include <linux/types.h>
#include "records.h"

struct mem_live;

struct mem_walk {
	struct mem_live *live;
	/*
	 * The last MEM_ALLOC fed: its identity, its bytes (resolved), the device's live bytes;
	 * a free's block's allocation time (0: allocated before the records began).
	 */
	__u64 last_ts, last_addr, last_bytes, last_live, last_alloc_ts;
	__u32 last_tid;
};

void *mem_walk_new(void);
void mem_walk_observe(void *w, const struct bs_hdr *rec);
void mem_walk_free(void *w);

struct trace_model;
/* The walk state of M when REC is the MEM_ALLOC it was just fed, else NULL. */
const struct mem_walk *mem_walk__of(const struct trace_model *m, const struct bs_hdr *rec);

#endif /* BPFSIGHT_MEM_WALK_H */
