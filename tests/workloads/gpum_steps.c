// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of the gpumetrics family's per-step report: N steps, each a
 * cudaProfilerStart() ... cudaProfilerStop() range of the real libcudart (dlopen'ed: no GPU
 * needed, the calls fail fast inside the library, past the cuda family's probes) lasting
 * STEP_MS, GAP_MS apart: the cudaProfilerApi steps (stats --steps=cudaProfilerApi). It prints
 * "pid P", then waits for a line on stdin before its first step.
 *
 * Usage: gpum_steps LIBCUDART N STEP_MS GAP_MS
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*profiler_fn)(void);

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t))
		;
}

int main(int argc, char **argv)
{
	profiler_fn start, stop;
	char line[64];
	void *lib;
	long n;

	if (argc != 5 || (n = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: %s LIBCUDART N STEP_MS GAP_MS\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	start = lib ? (profiler_fn)dlsym(lib, "cudaProfilerStart") : NULL;
	stop = lib ? (profiler_fn)dlsym(lib, "cudaProfilerStop") : NULL;
	if (!start || !stop) {
		fprintf(stderr, "%s: no cudaProfilerStart/Stop in %s: %s\n", argv[0], argv[1],
			dlerror());
		return 1;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (long i = 0; i < n; i++) {
		start();
		sleep_ms(atol(argv[3]));
		stop();
		sleep_ms(atol(argv[4]));
	}
	return 0;
}
