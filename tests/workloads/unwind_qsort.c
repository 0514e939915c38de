// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native stacks through code without frame pointers (tests/e2e/test_unwind_stacks.py): built
 * with -O2 -fomit-frame-pointer (the Makefile), as libcudart, libtorch and Debian's glibc are.
 * main -> level_a -> level_b -> level_c, which sorts with libc's qsort; its comparator, called
 * from inside qsort, does what the mode says:
 *   calls CUDART ROUNDS  cudaStreamQuery (the real libcudart at CUDART) and getppid, once per
 *                        round, ROUNDS rounds 20 ms apart (the first stacks load the tables)
 *   spin MS              spins for MS milliseconds of its CPU time in spin_here (cpu samples)
 *   sleep                threads sleep in the kernel in nested calls, for ever (gdb's view):
 *                        "sleeper" in nanosleep under nest_x -> nest_y, "reader" in read()
 *                        under the comparator inside qsort; prints "ready PID" when both are
 *                        in place
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cudart_dl.h"

static stream_query_fn query;
static const char *mode;
static long spin_ms;
static int pipe_fds[2];
static volatile long sink;

static __u_long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The process's CPU time: a spin measured in it gives as many samples on a loaded machine. */
static long cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads the monotonic clock (the vDSO's frames above it), MS of CPU time, not of the wall. */
__attribute__((noinline)) static void spin_here(void)
{
	long end = cpu_ms() + spin_ms;

	for (unsigned i = 1;; i++) {
		sink += now_ms();
		if (!(i & 0xfff) && cpu_ms() >= end)
			break;
	}
}

/* The comparator, called by qsort (libc: no frame pointers either). */
__attribute__((noinline)) static int compare_cb(const void *x, const void *y)
{
	char c;

	if (!strcmp(mode, "calls")) {
		sink += query ? query(NULL) : 0;
		sink += getppid();
	} else if (!strcmp(mode, "spin")) {
		spin_here();
	} else if (read(pipe_fds[0], &c, 1) < 0) {
		sink++;
	}
	return *(const int *)x - *(const int *)y;
}

/* Each level works after its call: no tail call hides a frame. */
__attribute__((noinline)) static int level_c(int k)
{
	int v[2] = { k + 1, k };

	qsort(v, 2, sizeof(v[0]), compare_cb);
	sink += v[0];
	return v[1] + 1;
}

__attribute__((noinline)) static int level_b(int k)
{
	int r = level_c(k + 1);

	sink += r;
	return r + 1;
}

__attribute__((noinline)) static int level_a(int k)
{
	int r = level_b(k + 1);

	sink += r;
	return r + 1;
}

__attribute__((noinline)) static void nest_y(void)
{
	struct timespec ts = { 3600, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void nest_x(void)
{
	nest_y();
	sink++;
}

static void *sleeper(void *arg)
{
	pthread_setname_np(pthread_self(), "sleeper");
	nest_x();
	return arg;
}

static void *reader(void *arg)
{
	pthread_setname_np(pthread_self(), "reader");
	sink += level_a(0);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	int rounds = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: unwind_qsort calls CUDART ROUNDS | spin MS | sleep\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "calls") && argc >= 4) {
		query = cudart_stream_query(argv[2], "unwind_qsort");
		rounds = atoi(argv[3]);
	} else if (!strcmp(mode, "spin") && argc >= 3) {
		spin_ms = atol(argv[2]);
	} else if (!strcmp(mode, "sleep")) {
		if (pipe(pipe_fds) || pthread_create(&t[0], NULL, sleeper, NULL) ||
		    pthread_create(&t[1], NULL, reader, NULL))
			return 1;
		usleep(100000);
		printf("ready %d\n", getpid());
		fflush(stdout);
		pthread_join(t[0], NULL);
		return 0;
	} else {
		fprintf(stderr, "unwind_qsort: bad arguments\n");
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		sink += level_a(i);
		if (i + 1 < rounds)
			usleep(20000);
	}
	printf("done %ld\n", (long)(sink & 1));
	return 0;
}
