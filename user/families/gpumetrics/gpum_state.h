/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The gpumetrics family's record side: its state over a recording (gpumetrics.c, gpum_drain.c). */
#ifndef BPFSIGHT_GPUM_STATE_H
#define BPFSIGHT_GPUM_STATE_H

#include "gpumetrics.h"

struct hmap;
struct record_ctx;

struct gpum_state {
	struct gpum_sampler sp;
	__u32 hz; /* asked */
	int verbose;
	__u32 state;	    /* the sampler's last word (enum bs_gpum_state) */
	__u32 hz_now, ndev; /* ... its rate and devices */
	__u64 seen_late, seen_full, seen_lost;
	__u64 said_lost; /* devices whose loss was said */
	int ended_said;
	struct hmap *children; /* {pid} -> u64 when it ended (0: alive): targets' children */
};

/* The channel's records into the recording, its counters' increments as losses. */
void gpum_drain(struct record_ctx *ctx, struct gpum_state *st);
/* A STATUS record of STATE, written by the recorder (the sampler could not say it). */
void gpum_status(struct record_ctx *ctx, struct gpum_state *st, enum bs_gpum_state state,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* How long an ended child's samples are still taken: two polls, and they are drained. */
#define GPUM_CHILD_KEEP_NS 3000000000ull
void gpum_forget_children(struct gpum_state *st, __u64 now);
/* The recording stopped the sampler: a STOPPED record with its ticks and CPU time. */
void gpum_stopped(struct record_ctx *ctx, struct gpum_state *st);
/* The targets' children, from their FORK records (struct family.observe). */
void gpum_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec);
/* The sampler ended before the recording did: said and written once. */
void gpum_check_alive(struct record_ctx *ctx, struct gpum_state *st);

#endif /* BPFSIGHT_GPUM_STATE_H */
