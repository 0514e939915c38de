// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The cuda family's metrics: a latency histogram per process and API function. */
#include "cuda.h"
#include "ucall_metrics.h"

static const struct ucall_metrics_def cuda_def = {
	.family = &family_cuda,
	.type = BS_REC_CUDA_CALL,
	.table = &cuda_table,
	.name = "bpfsight_cuda_api_duration_seconds",
	.help = "CUDA runtime and driver API calls the application made, by duration.",
};

static int cuda_metrics_open(const struct record_opts *o, void **st)
{
	return ucall_metrics__open(&cuda_def, st);
}

const struct metrics_family cuda_metrics = {
	.open = cuda_metrics_open,
	UCALL_METRICS_HOOKS,
};
