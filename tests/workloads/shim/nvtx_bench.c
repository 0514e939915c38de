// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cost of one nvtxRangePushA + nvtxRangePop pair, for the shim's numbers (no injection,
 * shim idle, shim recording).
 *
 *   nvtx_bench [--iters N] [--wait-file PATH]
 *
 * Loads the injection (nvtxInitialize), prints {"pid": P}, waits for PATH if given, warms
 * up with N/10 pairs, then times N pairs (default 1000000) on CLOCK_MONOTONIC and prints
 * {"iters": N, "ns_per_pair": X}.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const struct timespec tick = { 0, 10000000 };
	const char *wait_file = NULL;
	long iters = 1000000, i;
	struct stat st;
	double t0, t1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--wait-file") && i + 1 < argc) {
			wait_file = argv[++i];
		} else {
			fprintf(stderr, "usage: nvtx_bench [--iters N] [--wait-file PATH]\n");
			return 2;
		}
	}
	nvtxInitialize(NULL);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (wait_file && stat(wait_file, &st))
		nanosleep(&tick, NULL);
	for (i = 0; i < iters / 10; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
	}
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
	}
	t1 = now_ns();
	printf("{\"iters\": %ld, \"ns_per_pair\": %.2f}\n", iters, (t1 - t0) / (double)iters);
	return 0;
}
