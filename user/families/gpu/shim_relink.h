/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The launch join run again when a trace is read: the gpu family's reorder hook (gpu_reorder,
 * struct family_reorder), which trace_walk.h runs ahead of the model. The file's own cuda calls,
 * CUPTI API records and GPU records, in file order (the order the recorder wrote them,
 * which is the order they arrived), go through the recorder's join (shim_join.h), so a file
 * written by an earlier version, or whose recorder gave up too soon, gets every link its
 * records allow. A link to a cuda call already in the file is kept. The join's clock is the
 * latest timestamp read; memory stays bounded by the join's window, as when recording.
 */
#ifndef BPFSIGHT_SHIM_RELINK_H
#define BPFSIGHT_SHIM_RELINK_H

#include <stdio.h>
#include "records.h"
#include "shim_join.h"

struct shim_relink;

/* CALLS: the file has the cuda family's calls (else API records are decided as they come). */
struct shim_relink *shim_relink__new(int calls);
void shim_relink__free(struct shim_relink *rl);
/*
 * The next record of the file. 1: REC goes on as it is (the caller uses it now); 0: the
 * relinker took it and gives it back, linked, from shim_relink__next (now or later).
 */
int shim_relink__feed(struct shim_relink *rl, const struct bs_hdr *rec);
/* The file ended: whatever still waits is decided. */
void shim_relink__end(struct shim_relink *rl);
/* A record the join released, or NULL; valid until the next call of feed or next. */
const struct bs_hdr *shim_relink__next(struct shim_relink *rl);
/* The join's counts; all 0 with RL NULL (trace_walk__reorder_state before the end). */
void shim_relink__stats(const struct shim_relink *rl, struct shim_join_stats *s);
/*
 * info's lines and JSON member "gpu_links" of a relinker's counts (ST: a shim_relink, or
 * NULL): gpu_reorder's info hooks (gpu_links_info.c).
 */
struct json;
void gpu_links__text(const void *st, FILE *f);
void gpu_links__json(const void *st, struct json *j);

#endif /* BPFSIGHT_SHIM_RELINK_H */
