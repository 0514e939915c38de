// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of attaching to a running multi-threaded process (-p, -a) making nested
 * runtime -> driver-shaped calls: THREADS threads, each calling cudaStreamQuery of LIB
 * (libnested_api.so: it calls cuStreamQuery) in bursts of BURST calls, a pause of PAUSE_US
 * after each burst (a burst: a thread's calls in the moments its probes come or go). Every call's stream argument says who made it and which call it was:
 * (thread index + 1) << 32 | sequence number (from 1, consecutive), so a trace shows for each
 * thread exactly which calls were made while it recorded: every call between the first and
 * the last recorded one of a thread must be there.
 *
 * Usage: ucall_nested LIB THREADS BURST PAUSE_US
 * Prints "pid P", then "calling" once every thread has made a call; runs until a line (or
 * EOF) on stdin, then prints "calls I N" per thread (N calls made) and "done".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

typedef int (*query_fn)(void *stream);

static query_fn query;
static long burst, pause_ns;
static atomic_int stop, started;

struct worker {
	pthread_t th;
	unsigned long idx, calls;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct timespec ts = { 0, pause_ns };

	while (!atomic_load(&stop)) {
		for (long i = 0; i < burst; i++)
			query((void *)((w->idx + 1) << 32 | ++w->calls));
		if (w->calls == (unsigned long)burst)
			atomic_fetch_add(&started, 1);
		if (pause_ns)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker ws[MAX_THREADS];
	struct timespec tick = { 0, 1000000 };
	void *lib;
	char line[64];
	int n;

	if (argc != 5) {
		fprintf(stderr, "usage: %s LIB THREADS BURST PAUSE_US\n", argv[0]);
		return 2;
	}
	n = atoi(argv[2]);
	burst = atol(argv[3]);
	pause_ns = atol(argv[4]) * 1000;
	if (n < 1 || n > MAX_THREADS || burst < 1 || pause_ns < 0 || pause_ns >= 1000000000) {
		fprintf(stderr, "%s: THREADS 1..%d, BURST 1 or more, PAUSE_US below 1 s\n", argv[0],
			MAX_THREADS);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	query = lib ? (query_fn)dlsym(lib, "cudaStreamQuery") : NULL;
	if (!query) {
		fprintf(stderr, "%s: no cudaStreamQuery in %s: %s\n", argv[0], argv[1], dlerror());
		return 1;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		ws[i].idx = i;
		if (pthread_create(&ws[i].th, NULL, work, &ws[i])) {
			fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
			return 1;
		}
	}
	while (atomic_load(&started) < n)
		nanosleep(&tick, NULL);
	printf("calling\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++) {
		pthread_join(ws[i].th, NULL);
		printf("calls %d %lu\n", i, ws[i].calls);
	}
	printf("done\n");
	return 0;
}
