/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loss is never silent: the BPF programs' per-CPU counters, user space's own (ctx->lost_user)
 * and the ring pump's drops become LOSS records as they grow, per family and cause.
 */
#ifndef BPFSIGHT_RECORD_LOSSES_H
#define BPFSIGHT_RECORD_LOSSES_H

#include <stddef.h>
#include <linux/types.h>

struct record_ctx;

/*
 * Turn increases of the loss counters into LOSS records; SEEN holds what was written per
 * key, TOTAL grows by the new ones. Returns 1 when records of the recording's own (exec,
 * dlopen) were lost since: the caller has the uprobe manager look at every process again.
 */
int record_losses__account(struct record_ctx *ctx, __u64 *seen, __u64 *total);
/* " (cuda: task_map_full 3; gil: ringbuf_full 5)" for the end-of-run line; "" when none. */
void record_losses__summary(const __u64 *seen, char *buf, size_t len);

#endif /* BPFSIGHT_RECORD_LOSSES_H */
