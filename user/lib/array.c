// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Growable arrays (array.h). */
#include <errno.h>
#include <stdlib.h>
#include "array.h"

int array__grow(void **v, size_t n, size_t *cap, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 256;
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}
