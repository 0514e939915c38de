// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The native walk's cost per stack (bench/bench_unwind_walk.py): getppid() CALLS times at the
 * bottom of DEPTH nested calls (a stack of DEPTH + 5 frames: the wrapper, the calls, main and
 * libc's start), built twice by the Makefile: with frame pointers (unwind_deep_fp: the
 * frame-pointer walk) and -O2 -fomit-frame-pointer (unwind_deep_nofp: the unwind tables).
 * Prints {"calls": N, "thread_cpu_ns": T}: the thread's CPU time over the calls, the BPF
 * programs run in its system calls' exits included.
 *
 *   unwind_deep CALLS DEPTH
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;

static long thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Works after its call: no tail call folds the frames. */
__attribute__((noinline)) static long nest(int depth, long calls)
{
	long r = 0;

	if (depth > 0) {
		r = nest(depth - 1, calls);
		sink += r;
		return r + 1;
	}
	for (long i = 0; i < calls; i++)
		r += getppid();
	return r;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 100000, t0;
	int depth = argc > 2 ? atoi(argv[2]) : 25;

	nest(depth, 1000); /* the first stacks load the tables */
	usleep(200000);
	t0 = thread_ns();
	sink += nest(depth, calls);
	printf("{\"calls\": %ld, \"thread_cpu_ns\": %ld}\n", calls, thread_ns() - t0);
	return 0;
}
