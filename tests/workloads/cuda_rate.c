// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of a steady event rate, as a training job's launch thread makes one: RATE
 * calls a second of the real libcudart's cudaStreamQuery (dlopen'ed: no GPU needed, each call
 * fails fast inside the library, past the cuda family's probes), paced in 1 ms sleeps, for
 * SECONDS seconds.
 *
 * Usage: cuda_rate LIBCUDART RATE SECONDS
 * Prints "pid P" and waits for a line on stdin; then calls, and prints "calls N" (every call
 * made) at the end. A pacer that falls behind (a slow machine) makes fewer calls, never more.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*stream_query_fn)(void *stream);

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	struct timespec t0, tick = { 0, 1000000 };
	stream_query_fn query;
	long rate, calls = 0;
	double secs, el;
	void *lib;
	char line[16];

	if (argc != 4) {
		fprintf(stderr, "usage: %s LIBCUDART RATE SECONDS\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	query = lib ? (stream_query_fn)dlsym(lib, "cudaStreamQuery") : NULL;
	if (!query) {
		fprintf(stderr, "cuda_rate: %s\n", dlerror());
		return 1;
	}
	rate = atol(argv[2]);
	secs = atof(argv[3]);
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((el = since(&t0)) < secs) {
		long want = (long)(el * (double)rate);

		for (; calls < want; calls++)
			query(NULL);
		nanosleep(&tick, NULL);
	}
	printf("calls %ld\n", calls);
	return 0;
}
