// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Threads that go idle and come back: `idle_threads T K WAIT_MS` starts T threads, each
 * makes K getppid, then all wait (blocked, no system calls) until the main thread has slept
 * WAIT_MS; then each makes K getppid and K sched_get_priority_max(0) more, and exits. Prints
 * "pid P" at the start and "idle" once every thread waits. For the osrt eviction of idle
 * aggregates: totals must stay exact across it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static pthread_barrier_t idle, go;
static long k;

static void *worker(void *arg)
{
	for (long i = 0; i < k; i++)
		syscall(SYS_getppid);
	pthread_barrier_wait(&idle);
	pthread_barrier_wait(&go);
	for (long i = 0; i < k; i++)
		syscall(SYS_getppid);
	for (long i = 0; i < k; i++)
		syscall(SYS_sched_get_priority_max, 0);
	return arg;
}

int main(int argc, char **argv)
{
	long t, wait_ms;
	pthread_t *th;

	if (argc != 4 || (t = atol(argv[1])) < 1 || (k = atol(argv[2])) < 0 ||
	    (wait_ms = atol(argv[3])) < 0) {
		fprintf(stderr, "usage: idle_threads T K WAIT_MS\n");
		return 2;
	}
	th = calloc(t, sizeof(*th));
	if (!th)
		return 1;
	printf("pid %d\n", getpid());
	fflush(stdout);
	pthread_barrier_init(&idle, NULL, t + 1);
	pthread_barrier_init(&go, NULL, t + 1);
	for (long i = 0; i < t; i++)
		if (pthread_create(&th[i], NULL, worker, NULL))
			return 1;
	pthread_barrier_wait(&idle);
	printf("idle\n");
	fflush(stdout);
	struct timespec ts = { wait_ms / 1000, wait_ms % 1000 * 1000000 };
	nanosleep(&ts, NULL);
	pthread_barrier_wait(&go);
	for (long i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	return 0;
}
