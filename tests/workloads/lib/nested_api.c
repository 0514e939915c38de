// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libnested_api.so: a runtime-shaped call that makes a driver-shaped one, as libcudart's
 * calls enter libcuda: cudaStreamQuery calls cuStreamQuery with the same stream. Both names
 * are in the cuda family's table, so the uprobe manager probes them here as it probes a
 * statically linked runtime: every call is one record at depth 0 and one at depth 1. The
 * real libcudart cannot show this without a driver (the stub libcuda fails it before any
 * driver call). Neither call is a tail call nor inlined: each has a frame of its own, begun
 * by `push %rbp` as libcudart's functions are (an instruction the kernel emulates: a uprobe
 * there costs a fraction of one it must single-step).
 */
#define API __attribute__((noinline, optimize("no-omit-frame-pointer")))

volatile unsigned long nested_api_calls;

/* A call of their own: neither function is a leaf, whose frame the compiler would omit. */
__attribute__((noinline)) static void count(void)
{
	nested_api_calls++;
}

API int cuStreamQuery(void *stream)
{
	count();
	return stream ? 600 : 0; /* CUDA_ERROR_NOT_READY */
}

API int cudaStreamQuery(void *stream)
{
	int r = cuStreamQuery(stream);

	count();	    /* after the call: not a tail call */
	return r ? 600 : 0; /* cudaErrorNotReady */
}
