// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nvtx family, record side: placeholder until the shim channel lands. */
#include <stddef.h>
#include "nvtx.h"

static int nvtx_attach(struct record_ctx *ctx, void **state)
{
	*state = NULL; /* records nothing yet */
	return 0;
}

static void nvtx_detach(struct record_ctx *ctx, void *state)
{
}

const struct family family_nvtx = {
	.name = "nvtx",
	.desc = "NVTX ranges, marks and names (cupti-shim as the NVTX injection)",
	.attach = nvtx_attach,
	.detach = nvtx_detach,
	.decoders = nvtx_decoders,
	.reports = nvtx_reports,
};
