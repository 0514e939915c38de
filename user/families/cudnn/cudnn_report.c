// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The cudnn report: cudnn_sum, nsys's API summary over the application's calls (api_sum.h). */
#include "api_sum.h"
#include "cudnn.h"

static void *cudnn_sum__new(void)
{
	return api_sum__new(&cudnn_table);
}

static const struct report cudnn_sum = {
	.name = "cudnn_sum",
	.desc = "cuDNN API Summary",
	.new = cudnn_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
};

const struct report *const cudnn_reports[] = { &cudnn_sum, NULL };
