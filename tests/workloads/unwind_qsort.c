// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native stacks through code without frame pointers (tests/e2e/test_unwind_stacks.py): built
 * with -O2 -fomit-frame-pointer (the Makefile), as libcudart, libtorch and Debian's glibc are.
 * main -> level_a -> level_b -> level_c, which sorts with libc's qsort; its comparator, called
 * from inside qsort, does what the mode says:
 *   calls CUDART ROUNDS  cudaStreamQuery (the real libcudart at CUDART) and getppid, once per
 *                        round, ROUNDS rounds 20 ms apart
 *   burst CUDART ROUNDS  the same rounds at once, no pause: the first stacks are whole only
 *                        where the tables were ready before the program ran
 *   wait CUDART ROUNDS   loads CUDART, prints "ready PID", waits for SIGUSR1 (a recorder
 *                        attaches with -p meanwhile), then the rounds at once
 *   fork CUDART ROUNDS   loads CUDART and forks: the child makes the rounds at once, the
 *                        parent waits for it
 *   dlopen LIB CUDART ROUNDS
 *                        dlopen()s LIB (libunwind_dl.so) and at once calls its dl_run, whose
 *                        own comparator inside qsort calls cudaStreamQuery ROUNDS times
 *   spin MS              spins for MS milliseconds of its CPU time in spin_here (cpu samples)
 *   sleep                threads sleep in the kernel in nested calls, for ever (gdb's view):
 *                        "sleeper" in nanosleep under nest_x -> nest_y, "reader" in read()
 *                        under the comparator inside qsort; prints "ready PID" when both are
 *                        in place
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
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

/* dlopen LIB, then at once its dl_run: ROUNDS cudaStreamQuery calls from its own code. */
static int run_dlopened(const char *lib, const char *cudart, int rounds)
{
	stream_query_fn q = cudart_stream_query(cudart, "unwind_qsort");
	void *h = q ? dlopen(lib, RTLD_NOW) : NULL;
	long (*run)(stream_query_fn, int) =
		h ? (long (*)(stream_query_fn, int))dlsym(h, "dl_run") : NULL;

	if (!run) {
		fprintf(stderr, "unwind_qsort: no dl_run in %s: %s\n", lib, dlerror());
		return 1;
	}
	sink += run(q, rounds);
	printf("done %ld\n", (long)(sink & 1));
	return 0;
}

/* Forks: 1 in the parent once the child ended well, 0 in the child, which goes on. */
static int in_parent(void)
{
	pid_t child = fork();
	int status;

	if (child <= 0)
		return child < 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		exit(1);
	return 1;
}

/* "ready PID", then SIGUSR1 (blocked, so it only ends the wait). 0, or 1 on an error. */
static int wait_usr1(void)
{
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL))
		return 1;
	printf("ready %d\n", getpid());
	fflush(stdout);
	return sigwaitinfo(&usr1, NULL) != SIGUSR1;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	int rounds = 1;

	int pause_us = 20000;

	if (argc < 2) {
		fprintf(stderr, "usage: unwind_qsort calls|burst|wait CUDART ROUNDS | "
				"dlopen LIB CUDART ROUNDS | spin MS | sleep\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "dlopen") && argc >= 5)
		return run_dlopened(argv[2], argv[3], atoi(argv[4]));
	if ((!strcmp(mode, "calls") || !strcmp(mode, "burst") || !strcmp(mode, "wait") ||
	     !strcmp(mode, "fork")) &&
	    argc >= 4) {
		/* Loaded first: an attach finds it mapped. */
		query = cudart_stream_query(argv[2], "unwind_qsort");
		rounds = atoi(argv[3]);
		if (strcmp(mode, "calls"))
			pause_us = 0;
		if (!strcmp(mode, "wait") && wait_usr1())
			return 1;
		if (!strcmp(mode, "fork") && in_parent())
			return 0;
		mode = "calls"; /* what the comparator does */
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
		if (i + 1 < rounds && pause_us)
			usleep(pause_us);
	}
	printf("done %ld\n", (long)(sink & 1));
	return 0;
}
