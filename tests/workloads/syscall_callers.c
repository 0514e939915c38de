// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of stacks on system calls: functions with known names make their calls
 * through glibc's wrappers, which have no frame of their own (a frame-pointer walk from the
 * kernel skips the function that called them). Built with frame pointers, as a program
 * built for native stacks is. Prints "pid P" first.
 *   syscall_callers single N    main -> calls -> sleeper -> nanosleep (1 ms), and
 *                               main -> calls -> reader -> read (/dev/zero), N times each
 *   syscall_callers thread N    the same from a second thread (thread_main -> calls): glibc
 *                               then takes its wrappers' cancellable paths, which make a
 *                               stack frame of their own without a frame pointer
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int zero_fd;
static long rounds;
static volatile long sink;

static NOINLINE void sleeper(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
	sink++; /* not a tail call: sleeper stays on the stack */
}

static NOINLINE void reader(void)
{
	char buf[16];

	sink += read(zero_fd, buf, sizeof(buf));
}

static NOINLINE void calls(void)
{
	for (long i = 0; i < rounds; i++) {
		sleeper();
		reader();
	}
	sink++;
}

static void *thread_main(void *arg)
{
	calls();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 3 || (strcmp(argv[1], "single") && strcmp(argv[1], "thread"))) {
		fprintf(stderr, "usage: syscall_callers single|thread N\n");
		return 2;
	}
	rounds = atol(argv[2]);
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0)
		return 1;
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "single")) {
		calls();
		return 0;
	}
	if (pthread_create(&t, NULL, thread_main, NULL) || pthread_join(t, NULL))
		return 1;
	return 0;
}
