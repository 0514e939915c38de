// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The shim's modules (struct shim_module, shim.h): one line each. A test variant of the shim
 * adds its own through SHIM_MODULES_EXTRA (a test family's module: cupti-shim/shim.mk).
 */
#include <stddef.h>
#include "shim.h"

extern const struct shim_module shim_torch_module;  /* shim_torch.c */
extern const struct shim_module shim_pyfunc_module; /* shim_pyfunc.c */
#ifdef SHIM_MODULES_EXTRA
extern const struct shim_module SHIM_MODULES_EXTRA;
#endif

const struct shim_module *const shim_modules[] = {
	&shim_torch_module,
	&shim_pyfunc_module,
#ifdef SHIM_MODULES_EXTRA
	&SHIM_MODULES_EXTRA,
#endif
	NULL,
};

_Static_assert(sizeof(shim_modules) / sizeof(shim_modules[0]) <= SHIM_MAX_MODULES + 1,
	       "more modules than a thread has states for: raise SHIM_MAX_MODULES");

int shim_module__slot(const struct shim_module *m)
{
	for (int i = 0; shim_modules[i]; i++)
		if (shim_modules[i] == m)
			return i;
	return -1;
}
