// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A target for record --inject (tests/e2e/test_inject.py): threads that sit in the waits a
 * borrowed thread may be taken from, each checking every return value, and a main thread
 * that calls the CUDA runtime (linked shared or static: built twice).
 *
 *   inject_target CALLS BYTES
 *
 * Prints "ready" once its threads wait: one in read() on a pipe, one in pthread_cond_wait
 * (futex), one in a loop of 1 ms nanosleep()s; the main thread waits in read() on stdin.
 * On each line "go", the main thread makes CALLS cudaMalloc(256) calls (they fail here:
 * no GPU) and prints "done N" with the calls made so far; on "end" (or EOF) it writes BYTES
 * bytes into the pipe, wakes the waiter, stops the sleeper, joins them and prints one JSON
 * line of what each saw. Any EINTR or short count is counted: the test wants all zero. Exit
 * status 0 only when every thread saw exactly what it was given.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cudaMalloc(void **ptr, size_t size);

static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int woken, waits;
static atomic_int stop_sleeping, eintr, errors;
static long bytes_read, reads, sleeps;

static void *reader(void *arg)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(pipefd[0], buf, sizeof(buf));

		if (n == 0)
			break;
		if (n < 0) {
			atomic_fetch_add(errno == EINTR ? &eintr : &errors, 1);
			if (errno != EINTR)
				break;
			continue;
		}
		reads++;
		bytes_read += n;
	}
	return NULL;
}

static void *waiter(void *arg)
{
	pthread_mutex_lock(&mu);
	while (!woken) {
		int rc = pthread_cond_wait(&cv, &mu);

		if (rc)
			atomic_fetch_add(rc == EINTR ? &eintr : &errors, 1);
		waits++;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *sleeper(void *arg)
{
	const struct timespec ms = { 0, 1000000 };

	while (!atomic_load(&stop_sleeping)) {
		if (nanosleep(&ms, NULL))
			atomic_fetch_add(errno == EINTR ? &eintr : &errors, 1);
		else
			sleeps++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 10, nbytes = argc > 2 ? atol(argv[2]) : 100000;
	long made = 0, failed = 0, left;
	pthread_t t[3];
	char line[64], *chunk;

	if (pipe(pipefd))
		return 2;
	pthread_create(&t[0], NULL, reader, NULL);
	pthread_create(&t[1], NULL, waiter, NULL);
	pthread_create(&t[2], NULL, sleeper, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		/* stdio's read() of stdin: the main thread waits here while being injected. */
		if (!fgets(line, sizeof(line), stdin)) {
			if (ferror(stdin) && errno == EINTR) {
				atomic_fetch_add(&eintr, 1);
				clearerr(stdin);
				continue;
			}
			break;
		}
		if (!strncmp(line, "end", 3))
			break;
		for (long i = 0; i < calls; i++) {
			void *p = NULL;

			if (cudaMalloc(&p, 256))
				failed++;
			made++;
		}
		printf("done %ld\n", made);
		fflush(stdout);
	}
	chunk = calloc(1, 1000);
	for (left = nbytes; left > 0;) {
		ssize_t w = write(pipefd[1], chunk, left < 1000 ? left : 1000);

		if (w < 0) {
			atomic_fetch_add(errno == EINTR ? &eintr : &errors, 1);
			if (errno != EINTR)
				break;
			continue;
		}
		left -= w;
	}
	close(pipefd[1]);
	pthread_mutex_lock(&mu);
	woken = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	atomic_store(&stop_sleeping, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("{\"calls\": %ld, \"failed_calls\": %ld, \"bytes\": %ld, \"woken\": %d, "
	       "\"eintr\": %d, \"errors\": %d, \"sleeps_ok\": %d}\n",
	       made, failed, bytes_read, woken, atomic_load(&eintr), atomic_load(&errors),
	       sleeps > 0);
	free(chunk);
	return atomic_load(&eintr) || atomic_load(&errors) || bytes_read != nbytes ? 1 : 0;
}
