// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Launch target of bench/bench_launch_pair.py: a runtime launch that reaches the driver, as
 * cudaLaunchKernel reaches cuLaunchKernel on a GPU (the real libcudart makes no driver call
 * without one), through tests/workloads/lib/launch_pair.c, called in a loop.
 *
 *   pair_loop LIB [-m MS] [-r ROUNDS] [-o FILE] [rtlaunch|drvlaunch]...   (bench_loop.h)
 *
 *   rtlaunch   LIB's cudaLaunchKernel, which calls LIB's cuLaunchKernel
 *   drvlaunch  LIB's cuLaunchKernel alone, as cuBLAS launches
 */
#include <dlfcn.h>
#include <time.h>

/* The machine the launch figures come from is shared: the calling thread's CPU time. */
#define BENCH_CLOCK CLOCK_THREAD_CPUTIME_ID
#include "bench_loop.h"

struct dim3 {
	unsigned int x, y, z;
};

static int (*rt)(const void *, struct dim3, struct dim3, void **, size_t, void *);
static int (*drv)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
		  unsigned int, unsigned int, void *, void **, void **);

static void stub(void)
{
}

static long rtlaunch(long x)
{
	struct dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	void *args[] = { &x };

	return rt((const void *)stub, grid, block, args, 0, (void *)1);
}

static long drvlaunch(long x)
{
	void *args[] = { &x };

	return drv((void *)stub, 1, 1, 1, 32, 1, 1, 0, (void *)1, args, NULL);
}

int main(int argc, char **argv)
{
	struct bench_fn fns[] = {
		{ "rtlaunch", rtlaunch, NULL },
		{ "drvlaunch", drvlaunch, NULL },
	};
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h) {
		fprintf(stderr, "usage: %s LIB [bench_loop options]: %s\n", argv[0],
			argc > 1 ? dlerror() : "no LIB");
		return 2;
	}
	*(void **)&rt = dlsym(h, "cudaLaunchKernel");
	*(void **)&drv = dlsym(h, "cuLaunchKernel");
	if (!rt || !drv) {
		fprintf(stderr, "%s: %s has no cudaLaunchKernel/cuLaunchKernel\n", argv[0],
			argv[1]);
		return 2;
	}
	fns[0].site = (const void *)rt;
	fns[1].site = (const void *)drv;
	argv[1] = argv[0]; /* bench_loop_main's options follow LIB */
	return bench_loop_main(argc - 1, argv + 1, fns, 2);
}
