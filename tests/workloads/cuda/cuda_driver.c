// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA driver API workload with exactly known calls and arguments, linked against the stub
 * libcuda (/usr/local/cuda/lib64/stubs/libcuda.so, soname libcuda.so.1), found at run time
 * through the rpath $ORIGIN/stubs (the build makes stubs/libcuda.so.1 next to it). Every stub
 * function returns CUDA_ERROR_STUB_LIBRARY (34) and touches nothing, so the handles keep the
 * preset values below.
 *
 *   cuda_driver [--wait-stdin] [ROUNDS]                (ROUNDS defaults to 1)
 *
 * Calls: cuInit(0) once, then each round (names as exported, cuda.h maps the short ones):
 *   cuMemAlloc_v2(&dptr, 65536)
 *   cuModuleGetFunction(&fn, module, "my_driver_kernel")
 *   cuProfilerStart()
 *   cuLaunchKernel(fn, 3, 5, 7, 32, 2, 1, 512, stream, params, NULL) x2
 *   cuMemcpyHtoD_v2(dptr, hbuf, 4096) x2
 *   cuMemcpyDtoH_v2(hbuf, dptr, 12345)
 *   cuMemcpyDtoD_v2(dptr2, dptr, 777)
 *   cuMemcpyHtoDAsync_v2(dptr, hbuf, 8192, stream)
 *   cuMemsetD8_v2(dptr, 0x5a, 1000)
 *   cuProfilerStop()
 *   cuStreamSynchronize(stream); cuCtxSynchronize()
 *   cuMemFree_v2(dptr)
 * Output: "pid P", then after the calls "t0 P NS", "t1 P NS" (CLOCK_MONOTONIC around the
 * calls), "ptr P NAME 0xHEX" for dptr, dptr2, hbuf, fn, module, stream, and "ret P cuInit N".
 */
#include <cuda.h>
#include <cudaProfiler.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define P_DPTR	 0xd0000000ULL
#define P_DPTR2	 0xd0100000ULL
#define P_FUNC	 0xf00f0000UL
#define P_MODULE 0x3d3d0000UL
#define P_STREAM 0x5eed0000UL

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	CUdeviceptr dptr = P_DPTR, dptr2 = P_DPTR2;
	CUfunction fn = (CUfunction)(uintptr_t)P_FUNC;
	CUmodule module = (CUmodule)(uintptr_t)P_MODULE;
	CUstream stream = (CUstream)(uintptr_t)P_STREAM;
	unsigned long long t0, t1;
	long rounds = 1;
	int wait_stdin = 0, n = 0, i;
	void *params[] = { &dptr, &n };
	char *hbuf;
	CUresult init;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait-stdin")) {
			wait_stdin = 1;
		} else {
			fprintf(stderr, "usage: cuda_driver [--wait-stdin] [ROUNDS]\n");
			return 2;
		}
	}
	if (i < argc)
		rounds = atol(argv[i]);
	hbuf = calloc(1, 65536);
	if (!hbuf)
		return 4;
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (wait_stdin) {
		char c;

		if (read(0, &c, 1) != 1)
			return 3;
	}
	t0 = now_ns();
	init = cuInit(0);
	for (long r = 0; r < rounds; r++) {
		dptr = P_DPTR;
		cuMemAlloc(&dptr, 65536);
		fn = (CUfunction)(uintptr_t)P_FUNC;
		cuModuleGetFunction(&fn, module, "my_driver_kernel");
		cuProfilerStart();
		for (i = 0; i < 2; i++)
			cuLaunchKernel(fn, 3, 5, 7, 32, 2, 1, 512, stream, params, NULL);
		for (i = 0; i < 2; i++)
			cuMemcpyHtoD(dptr, hbuf, 4096);
		cuMemcpyDtoH(hbuf, dptr, 12345);
		cuMemcpyDtoD(dptr2, dptr, 777);
		cuMemcpyHtoDAsync(dptr, hbuf, 8192, stream);
		cuMemsetD8(dptr, 0x5a, 1000);
		cuProfilerStop();
		cuStreamSynchronize(stream);
		cuCtxSynchronize();
		cuMemFree(dptr);
	}
	t1 = now_ns();
	n = getpid();
	printf("t0 %d %llu\nt1 %d %llu\n", n, t0, n, t1);
	printf("ptr %d dptr 0x%llx\nptr %d dptr2 0x%llx\n", n, (unsigned long long)dptr, n,
	       (unsigned long long)dptr2);
	printf("ptr %d hbuf %p\nptr %d fn %p\n", n, (void *)hbuf, n, (void *)fn);
	printf("ptr %d module %p\nptr %d stream %p\n", n, (void *)module, n, (void *)stream);
	printf("ret %d cuInit %d\n", n, (int)init);
	free(hbuf);
	return 0;
}
