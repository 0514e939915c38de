/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Growable arrays: a pointer, a count and a capacity, grown by doubling. */
#ifndef BPFSIGHT_ARRAY_H
#define BPFSIGHT_ARRAY_H

#include <stddef.h>

/*
 * Room for one more element of SIZE bytes in the array *V of *N (capacity *CAP, doubled from
 * 256): 0 or -ENOMEM (*V and *CAP unchanged).
 */
int array__grow(void **v, size_t n, size_t *cap, size_t size);

/*
 * The same, doubled from FIRST: for arrays there are many of (one per process, per key), most
 * of them small.
 */
int array__grow_from(void **v, size_t n, size_t *cap, size_t size, size_t first);

#endif /* BPFSIGHT_ARRAY_H */
