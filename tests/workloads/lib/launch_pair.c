// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * liblaunch_pair.so: a runtime-shaped launch that makes a driver-shaped one, as libcudart's
 * cudaLaunchKernel enters libcuda's cuLaunchKernel on a machine with a GPU (the real
 * libcudart makes no driver call without a driver). Both names are in the cuda family's
 * table, so the uprobe manager probes them here as in a statically linked runtime. With the
 * real prototypes, so that the probes read the arguments as they read CUDA's.
 *
 * cudaLaunchKernel with grid.x == 0 fails before the driver, as the runtime refuses a bad
 * configuration (cudaErrorInvalidConfiguration); any other launch calls cuLaunchKernel with
 * the same shape and the host stub as the function, and returns what it returns.
 */
#include <stddef.h>

#define API __attribute__((noinline, optimize("no-omit-frame-pointer")))

struct dim3 {
	unsigned int x, y, z;
};

volatile unsigned long launch_pair_calls;

/* A call of their own: neither function is a leaf, whose frame the compiler would omit. */
__attribute__((noinline)) static void count(void)
{
	launch_pair_calls++;
}

API int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		       unsigned int by, unsigned int bz, unsigned int shared, void *stream,
		       void **params, void **extra)
{
	count();
	/* Every argument used: the compiler keeps them where the ABI puts them anyway. */
	return f && gx && gy && gz && bx && by && bz && stream && params && !extra && shared < 49152
		       ? 0
		       : 1; /* CUDA_ERROR_INVALID_VALUE */
}

API int cudaLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
			 size_t shared, void *stream)
{
	int r;

	if (!grid.x)
		return 9; /* cudaErrorInvalidConfiguration */
	r = cuLaunchKernel((void *)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			   (unsigned int)shared, stream, args, NULL);
	count();	    /* after the call: not a tail call */
	return r ? 400 : 0; /* cudaErrorInvalidResourceHandle */
}
