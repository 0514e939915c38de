/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nccl's record side with --flight-recorder (nccl.c): a dump's window no longer holds the
 * communicators' creation (the ranks, sizes, unique ids) nor their collectives before it, so
 * their numbers would restart at 0 in the window and differ from rank to rank (each rank's
 * window cut at another collective). This keeps, as the calls are recorded, what the reading
 * side's walk knows of each communicator and the entry times of its collectives of the last
 * window; a dump then begins with a BS_REC_NCCL_COMM per communicator made before its window
 * (struct family.flight_prologue): its identity and the number its first collective there has.
 * Memory: 8 bytes per collective of the window, per communicator; a process's go at its exit.
 */
#ifndef BPFSIGHT_NCCL_WINDOW_H
#define BPFSIGHT_NCCL_WINDOW_H

#include "nccl_decode.h"
#include "family_record.h"

struct nccl_window;

/* For windows of WINDOW_NS. NULL when out of memory. */
struct nccl_window *nccl_window__new(__u64 window_ns);
void nccl_window__free(struct nccl_window *nw);
/* Every nccl call record as it is recorded, and EXIT records. */
void nccl_window__observe(struct nccl_window *nw, const struct bs_hdr *rec);
/* A dump's window begins at FROM: a BS_REC_NCCL_COMM per communicator made before it, to FN. */
int nccl_window__prologue(struct nccl_window *nw, __u64 from, family_dump_write_fn fn, void *arg);

#endif /* BPFSIGHT_NCCL_WINDOW_H */
