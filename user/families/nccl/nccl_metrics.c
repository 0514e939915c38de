// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The nccl family's metrics: a latency histogram per process and API function. */
#include "nccl.h"
#include "ucall_metrics.h"

static const struct ucall_metrics_def nccl_def = {
	.family = &family_nccl,
	.type = BS_REC_NCCL_CALL,
	.table = &nccl_table,
	.name = "bpfsight_nccl_duration_seconds",
	.help = "NCCL API calls (collectives, p2p, groups, init), by duration.",
};

static int nccl_metrics_open(const struct record_opts *o, void **st)
{
	return ucall_metrics__open(&nccl_def, st);
}

const struct metrics_family nccl_metrics = {
	.open = nccl_metrics_open,
	UCALL_METRICS_HOOKS,
};
