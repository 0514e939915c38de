// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libcuda_wrap.so: an LD_PRELOAD interposer, as allocation trackers and API shims are, that
 * defines cudaMalloc and cudaMemcpy and calls through to the real libcudart's (RTLD_NEXT).
 * Both copies define the symbols, so both are probed: each call is seen twice, the
 * libcudart one nested (depth 1) under the wrapper's, and counted once in cuda_api_sum.
 * Not a tail call (the count after it), so the wrapper's frame really encloses the call.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*memcpy_fn)(void *, const void *, size_t, int);

volatile unsigned long cuda_wrap_calls;

static void *real(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "cuda_wrap: no %s after this library\n", name);
		abort();
	}
	return f;
}

int cudaMalloc(void **ptr, size_t bytes)
{
	static malloc_fn next;
	int ret;

	if (!next)
		next = (malloc_fn)real("cudaMalloc");
	ret = next(ptr, bytes);
	cuda_wrap_calls++;
	return ret;
}

int cudaMemcpy(void *dst, const void *src, size_t bytes, int kind)
{
	static memcpy_fn next;
	int ret;

	if (!next)
		next = (memcpy_fn)real("cudaMemcpy");
	ret = next(dst, src, bytes, kind);
	cuda_wrap_calls++;
	return ret;
}
