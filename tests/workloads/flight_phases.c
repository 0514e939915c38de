// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload for the flight recorder: system calls in phases the test drives, so each
 * dump can be checked against what happened inside its window. Reads commands from stdin,
 * one per line, and answers each with a line "ok T0 T1 N" (CLOCK_MONOTONIC ns around the
 * calls, N = calls made) once the calls are done:
 *   g N        N getppid
 *   s US K     K nanosleep of US microseconds
 *   b MS [T]   getppid as fast as it can for MS milliseconds, in T threads (default 1;
 *              N = how many, all threads)
 *   q          exit
 * Prints "pid P" first. Calls go through syscall() so libc adds none.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct busy {
	pthread_t t;
	unsigned long long end;
	long n;
};

static void *busy(void *arg)
{
	struct busy *b = arg;

	while (now_ns() < b->end)
		for (int i = 0; i < 1000; i++, b->n++)
			syscall(SYS_getppid);
	return NULL;
}

int main(void)
{
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid %d\n", getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long t0 = now_ns(), end;
		long a = 0, b = 0, n = 0;
		char cmd = 0;

		if (sscanf(line, " %c %ld %ld", &cmd, &a, &b) < 1 || cmd == 'q')
			break;
		if (cmd == 'g') {
			for (; n < a; n++)
				syscall(SYS_getppid);
		} else if (cmd == 's') {
			struct timespec ts = { .tv_sec = a / 1000000,
					       .tv_nsec = (a % 1000000) * 1000 };

			for (; n < b; n++)
				syscall(SYS_nanosleep, &ts, NULL);
		} else if (cmd == 'b') {
			struct busy th[16] = {};
			long nt = b < 1 ? 1 : b > 16 ? 16 : b;

			end = t0 + (unsigned long long)a * 1000000ull;
			for (long i = 0; i < nt; i++) {
				th[i].end = end;
				if (i && pthread_create(&th[i].t, NULL, busy, &th[i]))
					return 1;
			}
			busy(&th[0]);
			for (long i = 0; i < nt; i++) {
				if (i)
					pthread_join(th[i].t, NULL);
				n += th[i].n;
			}
		}
		printf("ok %llu %llu %ld\n", t0, now_ns(), n);
	}
	return 0;
}
