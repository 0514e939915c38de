// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* gpu family, record side: placeholder until the shim channel lands. */
#include <stddef.h>
#include "gpu.h"

static int gpu_attach(struct record_ctx *ctx, void **state)
{
	*state = NULL; /* records nothing yet */
	return 0;
}

static void gpu_detach(struct record_ctx *ctx, void *state)
{
}

const struct family family_gpu = {
	.name = "gpu",
	.desc = "GPU kernels, copies and memsets timed by CUPTI (cupti-shim)",
	.attach = gpu_attach,
	.detach = gpu_detach,
	.decoders = gpu_decoders,
	.reports = gpu_reports,
};
