/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * GIL contention over time, for the exports' counters: per process, the time its threads spent
 * waiting for the GIL in each fixed bin (time_bins.h), from the WAIT records. A bin's time over
 * its width is the average number of threads waiting during it. Only waits of at least the
 * recording's threshold have a record: shorter ones are in the per-thread aggregates only, so
 * the counter leaves them out (docs/EXPORT.md). Memory: 8 bytes per bin per python process
 * that waited, never per wait.
 */
#ifndef BPFSIGHT_GIL_CONTENTION_H
#define BPFSIGHT_GIL_CONTENTION_H

#include "records.h"
#include "time_bins.h"

#define GIL_CONTENTION_NAME "GIL contention"

struct gil_contention;

struct gil_contention *gil_contention__new(__u64 width);
void gil_contention__free(struct gil_contention *gc);
/*
 * Count REC when it is a GIL wait (other records are ignored); a process's bins start at
 * ORIGIN, as given with its first wait. 0 or -ENOMEM.
 */
int gil_contention__add(struct gil_contention *gc, const struct bs_hdr *rec, __u64 origin);
/* Iterate: *IT = 0 first; the next process's bins (and its pid), NULL at the end. */
const struct time_bins *gil_contention__next(const struct gil_contention *gc, size_t *it,
					     __u32 *pid);

#endif /* BPFSIGHT_GIL_CONTENTION_H */
