// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA runtime target of the per-probe and cuda-family benchmarks (bench/run_bench.py): the
 * real libcudart, called in a loop. Without a GPU every call fails fast (no driver), but it
 * still enters the library's exported function, where the uprobes sit.
 *
 *   cuda_loop [-m MS] [-r ROUNDS] [-o FILE] [streamquery|getdevice|launch]...  (bench_loop.h)
 *
 *   streamquery  cudaStreamQuery(0), the cheapest call bpfsight's cuda family records
 *   getdevice    cudaGetDevice(&dev), a call it does not record (no probe)
 *   launch       cudaLaunchKernel of a host stub, the launch-bound loop
 */
#include <cuda_runtime_api.h>
#include "bench_loop.h"

static void fake_kernel(void)
{
}

static long streamquery(long x)
{
	return cudaStreamQuery(0);
}

static long getdevice(long x)
{
	int dev = 0;

	return cudaGetDevice(&dev) + dev;
}

static long launch(long x)
{
	dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	void *args[] = { &x };

	return cudaLaunchKernel((const void *)fake_kernel, grid, block, args, 0, 0);
}

int main(int argc, char **argv)
{
	static const struct bench_fn fns[] = {
		/* In a PIE, a function's address is its real one (through the GOT), not a PLT
		 * stub's: the first byte of the library's code. */
		{ "streamquery", streamquery, (const void *)cudaStreamQuery },
		{ "getdevice", getdevice, (const void *)cudaGetDevice },
		{ "launch", launch, (const void *)cudaLaunchKernel },
	};

	return bench_loop_main(argc, argv, fns, 3);
}
