// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Growable arrays (array.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "array.h"

int array__grow_from(void **v, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t ncap = *cap ? *cap * 2 : first ? first : 1;
	void *nv;

	if (n < *cap)
		return 0;
	if (ncap < *cap || (size && ncap > SIZE_MAX / size))
		return -ENOMEM;
	nv = realloc(*v, ncap * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

int array__grow(void **v, size_t n, size_t *cap, size_t size)
{
	return array__grow_from(v, n, cap, size, 256);
}
