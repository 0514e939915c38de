// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libstep_proxy.so: the native half of the launch-bound training-step proxy
 * (tests/workloads/step_proxy.py; bench/bench_cost.py, tests/e2e/test_detach.py).
 *
 * A real step's launches are runtime calls that enter the driver: cudaLaunchKernel calls
 * libcuda's cuLaunchKernel. Without a driver the real libcudart makes no driver call (the stub
 * libcuda fails its initialisation: it calls cuDriverGetVersion, cuGetProcAddress_v2 and
 * cuGetExportTable once, then nothing), so this library exports a runtime-shaped
 * cudaLaunchKernel that does what the runtime's does here: its own CPU work, then the real
 * driver entry point, cuLaunchKernel of the stub libcuda (soname libcuda.so.1, found through
 * the rpath $ORIGIN/stubs). The cuda family probes both by name, as it probes a statically
 * linked runtime (tests/workloads/lib/nested_api.c): each launch is a call at depth 0 with its
 * driver call at depth 1. Every STEP_REAL_EVERY-th op also makes one call of the real
 * libcudart (dlopen'ed), which fails fast past the family's probe.
 *
 * The CPU work stands for what a launch costs a real host (the dispatcher, argument packing,
 * the driver's push to the GPU's queue): a fixed number of loop iterations, calibrated once
 * to about the nanoseconds asked for, so a recording's cost adds to it rather than hiding
 * in it.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define API __attribute__((visibility("default"), noinline))

typedef int (*real_call_fn)(void *stream);

static real_call_fn real_calls[2]; /* cudaStreamQuery, cudaEventQuery of the real runtime */
static uint64_t iters_per_us = 100;
static volatile uint64_t sink;

/* The kernels the proxy "launches": their addresses are what cudaLaunchKernel gets. */
API void proxy_kernel_fwd(void)
{
}

API void proxy_kernel_bwd(void)
{
}

/* The thread's CPU time: a calibration on a busy machine must not count others' turns. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void work(uint64_t iters)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* cudaLaunchKernel as the runtime's: its CPU work, then the driver's entry point. */
API cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
				 cudaStream_t stream)
{
	CUresult r;

	work(iters_per_us);
	r = cuLaunchKernel((CUfunction)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			   (unsigned int)shmem, (CUstream)stream, args, NULL);
	sink++; /* after the call: not a tail call */
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

/*
 * Loads the real libcudart at CUDART and calibrates the work loop; 0, or -1 (said on stderr).
 * The first real call initialises the runtime (and fails: no driver), outside any step.
 */
API int proxy_init(const char *cudart)
{
	void *lib = dlopen(cudart, RTLD_NOW | RTLD_LOCAL);
	uint64_t t0, dt, best = UINT64_MAX, n = 1000000;

	if (!lib) {
		fprintf(stderr, "step_proxy: %s\n", dlerror());
		return -1;
	}
	real_calls[0] = (real_call_fn)dlsym(lib, "cudaStreamQuery");
	real_calls[1] = (real_call_fn)dlsym(lib, "cudaEventQuery");
	if (!real_calls[0] || !real_calls[1]) {
		fprintf(stderr, "step_proxy: no cudaStreamQuery/cudaEventQuery in %s\n", cudart);
		return -1;
	}
	real_calls[0](NULL);
	for (int i = 0; i < 5; i++) {
		t0 = cpu_ns();
		work(n);
		dt = cpu_ns() - t0;
		best = dt < best ? dt : best;
	}
	iters_per_us = n * 1000 / (best + 1);
	return 0;
}

/*
 * N ops of about US microseconds of host work each: each a launch of KERNEL_BWD's or the
 * forward kernel; every REAL_EVERY-th op (0: none) also one real libcudart call. Returns the
 * real calls made.
 */
API int proxy_ops(int n, int us, int bwd, int real_every)
{
	dim3 grid = { 64, 1, 1 }, block = { 256, 1, 1 };
	const void *kernel = bwd ? (const void *)proxy_kernel_bwd : (const void *)proxy_kernel_fwd;
	int real = 0;

	for (int i = 0; i < n; i++) {
		void *args[] = { &i };

		work((uint64_t)(us > 1 ? us - 1 : 0) * iters_per_us);
		cudaLaunchKernel(kernel, grid, block, args, 0, NULL);
		if (real_every > 0 && i % real_every == real_every - 1)
			real_calls[real++ & 1](NULL);
	}
	return real;
}
