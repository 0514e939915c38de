// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* gpu family, reading side: placeholder until the decoders and reports land. */
#include <stddef.h>
#include "gpu.h"

const struct report *const gpu_reports[] = {
	NULL,
};
