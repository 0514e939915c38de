/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cupti-shim channel, record side: shared by the shim families (struct family_shim,
 * shim_family.h: gpu, nvtx, torch, pyfunc). The driver makes it when a family it records has a
 * shim, before they attach, and frees it after they detach; each shim family's attach joins it
 * (shim_link__attach, through struct family_attach.shim).
 *
 * Finding shims: every ELF file the uprobe manager examines (targets at start, exec, dlopen:
 * libcuda dlopen()s the shim at cuInit, nvtx3 at the first NVTX call) is looked at for USDT
 * notes of provider "bpfsight". Attaching: bpf/shim.bpf.c goes on the batch site and on the
 * control sites the recording's families want (struct family_shim.sites), with their
 * semaphores as ref_ctr offsets, so the kernel bumps them in the processes the link covers:
 *   - launch mode, -p and -a with --exclude-*: one link per process (pid filter), when the
 *     manager sees the process map the shim (scan or fork); other processes mapping the same
 *     file are left alone: their semaphores never move, their shims stay idle;
 *   - -a: one link per shim file for every process (pid 0), including later ones.
 * Unpacking is shim_unpack.c; what a family does with its records, its hooks there.
 *
 * Ending: while shim processes live, the stop hook reads what the ring holds, attaches the
 * drain probe (flush now) and keeps draining the ring until each process that sent anything
 * confirmed (STATUS EV_DRAINED, or EV_EXIT, or it exited), for at most SHIM_DRAIN_MS; then
 * everything is detached and the shims see their semaphores drop and go idle.
 */
#ifndef BPFSIGHT_SHIM_LINK_H
#define BPFSIGHT_SHIM_LINK_H

#include <linux/types.h>
#include "records.h"
#include "shim_unpack.h"

#define SHIM_DRAIN_MS 2000

struct family;
struct family_attach;
struct record_ctx;
struct record_opts;
struct shim_link;
struct uprobe_mgr;

/*
 * The channel of a recording: its BPF object loaded, a listener of MGR's discovery (and with
 * --inject, the injector). NULL with *ERR a negative errno.
 */
struct shim_link *shim_link__new(struct record_ctx *ctx, struct uprobe_mgr *mgr, int *err);
/* Detach everything, unpack what the ring still holds, free. L may be NULL. */
void shim_link__free(struct shim_link *l);

/* The record side of every shim family (struct family's hooks; shim_family.h). */
int shim_link__attach(const struct family_attach *a, void **state);
void shim_link__detach(struct record_ctx *ctx, void *state);
int shim_link__consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec);
int shim_link__poll(struct record_ctx *ctx, void *state);
void shim_link__stop(struct record_ctx *ctx, void *state);

/*
 * 1 when no process of this recording can ever send records of STATE's family: -p targets
 * only (no launched CMD, no -a, no --inject), none maps a cupti-shim and none has the
 * family's hint variable (struct family_shim.hint: a shim it loads later, at cuInit). Known
 * from the first poll on (the targets' first scan is done before the recording goes live).
 */
int shim_link__unreachable(struct record_ctx *ctx, void *state);

/*
 * Launch mode: give CMD the shim for F, as F's struct family_shim says (its env variable, or
 * LD_PRELOAD: a CPU-only job never calls cuInit, where CUDA_INJECTION64_PATH loads it). A value
 * the user set to another library is kept (with a warning). Returns 0, or -ENOENT when F was
 * asked for (-t) and no shim can be had.
 */
int shim_link__prelaunch(const struct record_opts *o, const struct family *f);

/*
 * The records of STATE's family (shim_link__attach's) as they are written: shim_unpack__listen
 * (the torch family's steps). FN NULL: no more.
 */
void shim_link__listen(void *state, shim_unpack_fn fn, void *arg);

/* The shim's batches: unpacked into records by shim_link__consume, never on disk. */
extern const __u16 shim_ring_only[];
/*
 * The record types shim_link__consume takes (every shim family's struct family.consumes):
 * the batches, a thread's namespace id, an exec and an exit, and the types the shim families'
 * ring hooks see (struct family_shim.ring_types), filled from the registry when the channel
 * is made (shim_link__new), before the driver asks (0-terminated).
 */
extern __u16 shim_link_consumes[];

#endif /* BPFSIGHT_SHIM_LINK_H */
