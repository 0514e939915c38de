// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libstep_proxy.so: the native half of the launch-bound training-step proxy
 * (tests/workloads/step_proxy.py; bench/bench_cost.py, tests/e2e/test_detach.py).
 *
 * An op is host work and then one CUDA call, the calls a real launch-bound step makes
 * (step_proxy.py has the mix). Runtime calls there enter the driver: cudaLaunchKernel calls
 * libcuda's cuLaunchKernel, cudaMemsetAsync its cuMemsetD8Async. Without a driver the real
 * libcudart makes no driver call (the stub libcuda fails its initialisation: it calls
 * cuDriverGetVersion, cuGetProcAddress_v2 and cuGetExportTable once, then nothing), so this
 * library exports runtime-shaped functions that do what the runtime's do there: their own CPU
 * work, then the real driver entry point of the stub libcuda (soname libcuda.so.1, found
 * through the rpath $ORIGIN/stubs). The cuda family probes both by name, as it probes a
 * statically linked runtime (tests/workloads/lib/nested_api.c). The step's direct driver
 * calls (cuBLAS's cuLaunchKernelEx, cuBLASLt's cuMemsetD8Async, cuKernelGetFunction) are
 * plain C calls into the stub libcuda, as a library linked against libcuda makes them.
 *
 * The CPU work stands for what a call costs a real host (the dispatcher, argument packing,
 * the driver's push to the GPU's queue): a fixed number of loop iterations, calibrated once
 * to about the nanoseconds asked for, so a recording's cost adds to it rather than hiding
 * in it. Every call made is counted (proxy_calls), by function and by whether it was made
 * inside another CUDA call, so that a test can tell what a recording must hold.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default"), noinline))

/* The functions whose calls are counted; proxy_fn_name(i) names them for the Python side. */
enum fn {
	F_RT_LAUNCH,
	F_RT_MEMSET,
	F_RT_MEMCPY,
	F_RT_SYNC,
	F_LAUNCH,
	F_LAUNCH_EX,
	F_MEMSET,
	F_MEMCPY,
	F_SYNC,
	F_GET_FUNCTION,
	N_FN
};

static const char *const fn_names[N_FN] = {
	[F_RT_LAUNCH] = "cudaLaunchKernel", [F_RT_MEMSET] = "cudaMemsetAsync",
	[F_RT_MEMCPY] = "cudaMemcpyAsync",  [F_RT_SYNC] = "cudaDeviceSynchronize",
	[F_LAUNCH] = "cuLaunchKernel",	    [F_LAUNCH_EX] = "cuLaunchKernelEx",
	[F_MEMSET] = "cuMemsetD8Async",	    [F_MEMCPY] = "cuMemcpyHtoDAsync_v2",
	[F_SYNC] = "cuCtxSynchronize_v2",   [F_GET_FUNCTION] = "cuKernelGetFunction",
};

/* made[f][0]: calls of f made by the step itself; made[f][1]: made inside a runtime call. */
static uint64_t made[N_FN][2];
static uint64_t iters_per_us = 100;
static volatile uint64_t sink;
static unsigned char batch[4096]; /* the host side of the step's input copy */

/* The kernels the proxy "launches": their addresses are what cudaLaunchKernel gets. */
API void proxy_kernel_fwd(void)
{
}

API void proxy_kernel_bwd(void)
{
}

/* Relaxed: the threads take turns (a step's phases hand over through Python's locks). */
static void count(enum fn f, int inside)
{
	__atomic_fetch_add(&made[f][inside], 1, __ATOMIC_RELAXED);
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

/*
 * The runtime-shaped calls: a microsecond of the runtime's own CPU work, then the driver's
 * entry point. The sink++ after each driver call keeps it from being a tail call (a return
 * probe must see the runtime function return after it).
 */
API cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
				 cudaStream_t stream)
{
	CUresult r;

	count(F_RT_LAUNCH, 0);
	work(iters_per_us);
	r = cuLaunchKernel((CUfunction)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			   (unsigned int)shmem, (CUstream)stream, args, NULL);
	count(F_LAUNCH, 1);
	sink++;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

API cudaError_t cudaMemsetAsync(void *ptr, int value, size_t bytes, cudaStream_t stream)
{
	CUresult r;

	count(F_RT_MEMSET, 0);
	work(iters_per_us);
	r = cuMemsetD8Async((CUdeviceptr)ptr, (unsigned char)value, bytes, (CUstream)stream);
	count(F_MEMSET, 1);
	sink++;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
				cudaStream_t stream)
{
	CUresult r;

	count(F_RT_MEMCPY, 0);
	work(iters_per_us);
	/* The step's only copy is host to device (its input batch). */
	r = cuMemcpyHtoDAsync_v2((CUdeviceptr)dst, src, bytes, (CUstream)stream);
	count(F_MEMCPY, 1);
	sink++;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

API cudaError_t cudaDeviceSynchronize(void)
{
	CUresult r;

	count(F_RT_SYNC, 0);
	work(iters_per_us);
	r = cuCtxSynchronize_v2(NULL);
	count(F_SYNC, 1);
	sink++;
	return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

/*
 * Loads the real libcudart at CUDART, as a real step's process has it mapped (and probed),
 * makes its first call there (which initialises the runtime, and fails: no driver) outside
 * any step, and calibrates the work loop; 0, or -1 (said on stderr).
 */
API int proxy_init(const char *cudart)
{
	void *lib = dlopen(cudart, RTLD_NOW | RTLD_LOCAL);
	uint64_t t0, dt, best = UINT64_MAX, n = 1000000;
	cudaError_t (*query)(cudaStream_t);

	if (!lib) {
		fprintf(stderr, "step_proxy: %s\n", dlerror());
		return -1;
	}
	query = (cudaError_t(*)(cudaStream_t))dlsym(lib, "cudaStreamQuery");
	if (!query) {
		fprintf(stderr, "step_proxy: no cudaStreamQuery in %s\n", cudart);
		return -1;
	}
	query(NULL);
	for (int i = 0; i < 5; i++) {
		t0 = cpu_ns();
		work(n);
		dt = cpu_ns() - t0;
		best = dt < best ? dt : best;
	}
	iters_per_us = n * 1000 / (best + 1);
	return 0;
}

/* One op's CUDA call, by its letter in a mix (step_proxy.py); 0, or -1 for another letter. */
static int call(char op, int i, int bwd)
{
	static const CUlaunchConfig ex = { .gridDimX = 96,
					   .gridDimY = 1,
					   .gridDimZ = 1,
					   .blockDimX = 384,
					   .blockDimY = 1,
					   .blockDimZ = 1 };
	dim3 grid = { 64, 1, 1 }, block = { 256, 1, 1 };
	const void *kernel = bwd ? (const void *)proxy_kernel_bwd : (const void *)proxy_kernel_fwd;
	/* Device pointers: never dereferenced (the stub fails every call). */
	void *dev = (void *)(uintptr_t)(0x7f0000000000ULL + (uint64_t)i * 4096);
	void *args[] = { &i };
	CUfunction f;

	switch (op) {
	case 'L':
		cudaLaunchKernel(kernel, grid, block, args, 0, NULL);
		return 0;
	case 'M':
		cudaMemsetAsync(dev, 0, 4096, NULL);
		return 0;
	case 'C':
		cudaMemcpyAsync(dev, batch, sizeof(batch), cudaMemcpyHostToDevice, NULL);
		return 0;
	case 'S':
		cudaDeviceSynchronize();
		return 0;
	case 'X':
		count(F_LAUNCH_EX, 0);
		cuLaunchKernelEx(&ex, (CUfunction)kernel, args, NULL);
		return 0;
	case 'm':
		count(F_MEMSET, 0);
		cuMemsetD8Async((CUdeviceptr)dev, 0, 4096, NULL);
		return 0;
	case 'F':
		count(F_GET_FUNCTION, 0);
		cuKernelGetFunction(&f, (CUkernel)kernel);
		return 0;
	}
	return -1;
}

/*
 * The ops of MIX, one letter each (L cudaLaunchKernel, M cudaMemsetAsync, C cudaMemcpyAsync,
 * S cudaDeviceSynchronize: runtime calls; X cuLaunchKernelEx, m cuMemsetD8Async,
 * F cuKernelGetFunction: direct driver calls), each about US microseconds of host work
 * (a runtime call's first microsecond inside it) and its call; BWD picks the kernel the
 * launches name. Returns the ops made, or -1 (nothing made) if MIX has another letter.
 */
API int proxy_ops(const char *mix, int us, int bwd)
{
	size_t n = strlen(mix);

	if (strspn(mix, "LMCSXmF") != n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int inner = strchr("LMCS", mix[i]) ? 1 : 0;

		work((uint64_t)(us > inner ? us - inner : 0) * iters_per_us);
		call(mix[i], (int)i, bwd);
	}
	return (int)n;
}

/* The name of counted function I, or NULL past the last. */
API const char *proxy_fn_name(int i)
{
	return i >= 0 && i < N_FN ? fn_names[i] : NULL;
}

/* Calls of function I made so far: by the step itself, or (INSIDE) inside its runtime calls. */
API unsigned long long proxy_calls(int i, int inside)
{
	return i >= 0 && i < N_FN ? __atomic_load_n(&made[i][inside != 0], __ATOMIC_RELAXED) : 0;
}
