// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of a recording that must stop whatever the event rate: THREADS threads, each
 * calling cudaGetDevice and cudaStreamQuery of the real libcudart (dlopen'ed: no GPU needed,
 * every call fails fast inside the library, past the cuda family's probes) in a loop, and
 * getppid every 64 rounds, until the process is killed or stdin closes. More threads than
 * cores keep the ring buffer fuller than any reader can empty it.
 *
 * Usage: cuda_storm LIBCUDART THREADS
 * Prints "pid P" once its threads wait; on a line read on stdin they start, and it prints
 * "running".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*get_device_fn)(int *dev);
typedef int (*stream_query_fn)(void *stream);

static get_device_fn get_device;
static stream_query_fn stream_query;
static pthread_barrier_t started;

static void *storm(void *arg)
{
	int dev;

	pthread_barrier_wait(&started);
	for (unsigned long i = 0;; i++) {
		get_device(&dev);
		stream_query(arg);
		if (!(i % 64))
			getppid();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	void *lib;
	int n;
	char c;

	if (argc != 3 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: %s LIBCUDART THREADS\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	get_device = lib ? (get_device_fn)dlsym(lib, "cudaGetDevice") : NULL;
	stream_query = lib ? (stream_query_fn)dlsym(lib, "cudaStreamQuery") : NULL;
	if (!get_device || !stream_query) {
		fprintf(stderr, "%s: no cudaGetDevice/cudaStreamQuery in %s: %s\n", argv[0],
			argv[1], dlerror());
		return 1;
	}
	pthread_barrier_init(&started, NULL, n + 1);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th, NULL, storm, (void *)(0x100 + i))) {
			perror("pthread_create");
			return 1;
		}
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (read(0, &c, 1) <= 0)
		return 0;
	pthread_barrier_wait(&started);
	printf("running\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
