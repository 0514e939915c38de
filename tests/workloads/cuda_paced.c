// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of `bpfsight top`: a thread named "cuda-caller" calls cudaStreamQuery of the
 * real libcudart (dlopen'ed: no GPU needed, every call fails fast inside the library) BATCH
 * times, then sleeps 10 ms, over and over (so at most 100 * BATCH calls a second), while the
 * main thread, named "idle", makes no CUDA call at all: it waits for stdin to close.
 *
 * Usage: cuda_paced LIBCUDART BATCH     (prints "pid P" and "caller TID")
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include "cudart_dl.h"

static stream_query_fn stream_query;
static long batch;

static void *caller(void *arg)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	prctl(PR_SET_NAME, "cuda-caller");
	printf("caller %d\n", gettid());
	fflush(stdout);
	for (;;) {
		for (long i = 0; i < batch; i++)
			stream_query((void *)0x5a);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char line[64];

	if (argc != 3 || (batch = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: %s LIBCUDART BATCH\n", argv[0]);
		return 2;
	}
	stream_query = cudart_stream_query(argv[1], argv[0]);
	if (!stream_query)
		return 1;
	prctl(PR_SET_NAME, "idle");
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, caller, NULL))
		return 1;
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
