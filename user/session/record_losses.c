// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The recording's losses: counters into LOSS records, and the end-of-run words (record_losses.h). */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "loss.h"
#include "record_ctx.h"
#include "record_losses.h"
#include "ring_pump.h"

/*
 * Each family's causes in the lost array (BS_LOST_KEY by its index I): the recording's and its
 * own; BLOCK, its record-type block, names it in the LOSS records.
 */
#define FOR_EACH_LOSS_KEY(i, block, l, own)                                                        \
	for (int i = 0; families[i]; i++)                                                          \
		if ((block = loss__family_block(families[i])) >= 0)                                \
			for (int own = 0; own <= 1; own++)                                         \
				for (l = own ? families[i]->losses : recording_losses;             \
				     l && l->name; l++)

int record_losses__account(struct record_ctx *ctx, __u64 *seen, __u64 *total)
{
	int ncpu = libbpf_num_possible_cpus(), block, own_lost = 0;
	const struct loss_cause *l;
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc(ncpu, sizeof(*vals))))
		return 0;
	if (ctx->pump) {
		__u64 dropped[RING_PUMP_BLOCKS] = { 0 };

		ring_pump__take_dropped(ctx->pump, dropped);
		for (int b = 0; b < RING_PUMP_BLOCKS; b++)
			if (dropped[b])
				ctx->lost_user[loss__key(loss__block_family((__u32)b << 4),
							 BS_LOSS_RINGBUF_FULL)] += dropped[b];
	}
	FOR_EACH_LOSS_KEY(i, block, l, own)
	{
		__u32 key = BS_LOST_KEY(i, l->cause);
		__u64 sum = ctx->lost_user[key];

		if (!bpf_map_lookup_elem(ctx->lost_fd, &key, vals))
			for (int c = 0; c < ncpu; c++)
				sum += vals[c];
		/* The ring refused records of the recording's own (exec, dlopen among them). */
		if (sum > seen[key] && key == loss__key(NULL, BS_LOSS_RINGBUF_FULL))
			own_lost = 1;
		if (sum > seen[key]) {
			struct bs_loss r = { .cause = l->cause,
					     .block = BS_LOSS_BLOCK_SET | block,
					     .count = sum - seen[key] };

			record_ctx__hdr(&r.h, BS_REC_LOSS, sizeof(r), 0, 0, 0);
			record_ctx__write(ctx, &r);
			*total += sum - seen[key];
			seen[key] = sum;
		}
	}
	free(vals);
	return own_lost;
}

void record_losses__summary(const __u64 *seen, char *buf, size_t len)
{
	const struct loss_cause *l;
	const char *prev = NULL;
	size_t used = 0;
	int block, n;

	buf[0] = 0;
	FOR_EACH_LOSS_KEY(i, block, l, own)
	{
		__u64 v = seen[BS_LOST_KEY(i, l->cause)];

		if (!v || used >= len)
			continue;
		n = snprintf(buf + used, len - used, "%s%s%s%s %llu",
			     !prev			 ? " ("
			     : prev == families[i]->name ? ", "
							 : "; ",
			     prev == families[i]->name ? "" : families[i]->name,
			     prev == families[i]->name ? "" : ": ", l->name, (unsigned long long)v);
		prev = families[i]->name;
		used += n > 0 ? (size_t)n : 0;
	}
	if (prev && used + 1 < len)
		strcat(buf, ")");
}
