// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu_alloc ROUNDS [--wait | --until-traced]: drives libfake_c10_cuda.so's caching allocator through a known
 * pattern on two devices, ROUNDS times, and prints every call it made with the allocator's
 * totals after it (what torch.cuda.memory_allocated() and memory_reserved() would say), one
 * line each, for tests/e2e/test_mem_gpu.py to compare with what bpfsight recorded:
 *   alloc DEV PTR BYTES BLOCK ALLOCATED RESERVED STREAM
 *   free DEV PTR BLOCK ALLOCATED RESERVED
 *   oom DEV BYTES ALLOCATED RESERVED
 * and "semaphores N" at the end (the USDT semaphores raised then). --wait: says "ready" and
 * waits for SIGUSR1 before the rounds, and again after them, then prints the semaphores once
 * more (a tracer attached meanwhile, then gone) once they are down or after 120 s: a
 * recording's probes are removed after it ends, by its bpfsight-detach, which a loaded
 * machine can take seconds over (docs/USAGE.md). --until-traced: waits (at most 60 s) for a
 * tracer to raise the malloc probe's semaphore first (a system-wide tracer finds the library
 * a moment after the process maps it).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fake_c10_cuda.h"

static size_t allocated[2], reserved[2];

static void wait_usr1(void)
{
	sigset_t s;
	int sig;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigwait(&s, &sig);
}

static void *alloc(int d, size_t bytes, long stream)
{
	size_t block = (bytes + 511) & ~(size_t)511;
	void *p = fake_malloc(d, bytes, stream);

	allocated[d] += block;
	printf("alloc %d %p %zu %zu %zu %zu %ld\n", d, p, bytes, block, allocated[d], reserved[d],
	       stream);
	return p;
}

static void release(int d, void *p, size_t bytes)
{
	size_t block = (bytes + 511) & ~(size_t)511;

	fake_free(d, p, bytes);
	allocated[d] -= block;
	printf("free %d %p %zu %zu %zu\n", d, p, block, allocated[d], reserved[d]);
}

static void segment(int d, size_t bytes)
{
	fake_segment(d, bytes);
	reserved[d] += bytes;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1, wait = argc > 2 && !strcmp(argv[2], "--wait");
	int until = argc > 2 && !strcmp(argv[2], "--until-traced");
	time_t end = time(NULL) + 60;
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wait) {
		printf("ready\n");
		wait_usr1();
	}
	while (until && !fake_semaphores() && time(NULL) < end)
		usleep(1000);
	for (int r = 0; r < rounds; r++) {
		void *a, *b, *c;

		segment(0, 20 << 20);
		segment(1, 2 << 20);
		a = alloc(0, 1 << 20, 0);
		b = alloc(0, (3 << 20) + 100, 7);
		c = alloc(1, 1000, 0);
		release(0, b, (3 << 20) + 100);
		fake_oom(0, 80ull << 30);
		printf("oom 0 %llu %zu %zu\n", 80ull << 30, allocated[0], reserved[0]);
		release(0, a, 1 << 20);
		release(1, c, 1000);
		fake_empty_cache(1);
		reserved[1] = allocated[1];
	}
	printf("semaphores %u\n", fake_semaphores());
	if (wait) {
		wait_usr1();
		for (end = time(NULL) + 120; fake_semaphores() && time(NULL) < end;)
			usleep(10000);
		printf("semaphores %u\n", fake_semaphores());
	}
	return 0;
}
