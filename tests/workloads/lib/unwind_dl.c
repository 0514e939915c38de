// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libunwind_dl.so: code without frame pointers that a program dlopen()s and calls at once
 * (tests/e2e/test_unwind_first.py; built -O2 -fomit-frame-pointer by the Makefile, as
 * libcudart and libtorch are). dl_run -> dl_level -> libc's qsort -> dl_compare, which calls
 * the cudaStreamQuery it is given: the cuda family's stack of that call begins in this
 * library, so it is whole only when the library's unwind table was ready before its first
 * call.
 */
#include <stdlib.h>

typedef int (*stream_query_fn)(void *stream);

static stream_query_fn query;
static volatile long sink;

__attribute__((noinline)) static int dl_compare(const void *x, const void *y)
{
	sink += query(NULL);
	return *(const int *)x - *(const int *)y;
}

/* Works after its call: no tail call hides its frame. */
__attribute__((noinline)) static int dl_level(int k)
{
	int v[2] = { k + 1, k };

	qsort(v, 2, sizeof(v[0]), dl_compare);
	sink += v[0];
	return v[1] + 1;
}

/* N calls of Q, one per sort, at once. */
__attribute__((visibility("default"))) long dl_run(stream_query_fn q, int n)
{
	query = q;
	for (int i = 0; i < n; i++)
		sink += dl_level(i);
	return sink;
}
