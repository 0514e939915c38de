// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpfsight stacks` on a program without Python (tests/e2e/test_stacks_dump.py): thread
 * "spinner" spins in spin_here() for ever, thread "sleeper" sleeps in sleep_here()
 * (nanosleep, an hour at a time), the main thread waits in pthread_join. Prints
 * "pid P spinner T sleeper T" once both threads are named.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static volatile unsigned long count;
static pthread_barrier_t named;

__attribute__((noinline)) static void spin_here(void)
{
	for (;;)
		count++;
}

__attribute__((noinline)) static void sleep_here(void)
{
	struct timespec ts = { 3600, 0 };

	for (;;)
		nanosleep(&ts, NULL);
}

static void *spinner(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	*(long *)arg = syscall(SYS_gettid);
	pthread_barrier_wait(&named);
	spin_here();
	return NULL;
}

static void *sleeper(void *arg)
{
	pthread_setname_np(pthread_self(), "sleeper");
	*(long *)arg = syscall(SYS_gettid);
	pthread_barrier_wait(&named);
	sleep_here();
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	long ta = 0, tb = 0;

	pthread_barrier_init(&named, NULL, 3);
	pthread_create(&a, NULL, spinner, &ta);
	pthread_create(&b, NULL, sleeper, &tb);
	pthread_barrier_wait(&named);
	printf("pid %d spinner %ld sleeper %ld\n", getpid(), ta, tb);
	fflush(stdout);
	pthread_join(a, NULL);
	return 0;
}
