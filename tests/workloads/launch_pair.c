// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of "one probe pair per launch" (docs/CUDA.md): launches through LIB
 * (liblaunch_pair.so: its cudaLaunchKernel calls its cuLaunchKernel, as libcudart's calls
 * libcuda's on a GPU), on the main thread, in three kinds, after a line (or EOF) on stdin:
 *
 *   RT   runtime launches that reach the driver: cudaLaunchKernel(pair_stub, 7x3x1, 128x2x1,
 *        96 bytes, stream RT_STREAM)
 *   BAD  runtime launches that fail before the driver (grid 0x1x1: cudaErrorInvalidConfiguration)
 *   DRV  direct driver launches, as cuBLAS makes them: cuLaunchKernel(DRV_FN, 3x5x7, 32x2x1,
 *        512 bytes, stream DRV_STREAM)
 *
 * Usage: launch_pair LIB RT BAD DRV
 * Prints "pid P", waits for its line, makes the calls, prints "done", then waits for another
 * line (or EOF) before it exits: a test reads the recorder's probe counts in between.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RT_STREAM  ((void *)0x5151)
#define DRV_STREAM ((void *)0xd5d5)
#define DRV_FN	   ((void *)0xf00f0000)

struct dim3 {
	unsigned int x, y, z;
};

typedef int (*rt_launch_fn)(const void *, struct dim3, struct dim3, void **, size_t, void *);
typedef int (*drv_launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
			     unsigned int, unsigned int, unsigned int, void *, void **, void **);

/* The host stub of the runtime launches: named from this program's symbols. */
__attribute__((noinline)) void pair_stub(void)
{
	asm volatile("" ::: "memory");
}

static void wait_line(void)
{
	int c;

	while ((c = getchar()) != EOF && c != '\n')
		;
}

int main(int argc, char **argv)
{
	struct dim3 grid = { 7, 3, 1 }, bad = { 0, 1, 1 }, block = { 128, 2, 1 };
	void *h, *args[] = { NULL };
	rt_launch_fn rt;
	drv_launch_fn drv;
	long n_rt, n_bad, n_drv;
	int fails = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s LIB RT BAD DRV\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	rt = h ? (rt_launch_fn)dlsym(h, "cudaLaunchKernel") : NULL;
	drv = h ? (drv_launch_fn)dlsym(h, "cuLaunchKernel") : NULL;
	if (!rt || !drv) {
		fprintf(stderr, "launch_pair: %s: %s\n", argv[1], dlerror());
		return 1;
	}
	n_rt = atol(argv[2]);
	n_bad = atol(argv[3]);
	n_drv = atol(argv[4]);
	printf("pid %d\n", getpid());
	fflush(stdout);
	wait_line();
	for (long i = 0; i < n_rt; i++)
		fails += rt((const void *)pair_stub, grid, block, args, 96, RT_STREAM) != 0;
	for (long i = 0; i < n_bad; i++)
		fails += rt((const void *)pair_stub, bad, block, args, 96, RT_STREAM) != 9;
	for (long i = 0; i < n_drv; i++)
		fails += drv(DRV_FN, 3, 5, 7, 32, 2, 1, 512, DRV_STREAM, args, NULL) != 0;
	printf("done %d\n", fails);
	fflush(stdout);
	wait_line();
	return 0;
}
