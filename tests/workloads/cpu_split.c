// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of the cpu family with known stacks and a known CPU split, built with frame
 * pointers (as a user's program would be for native stacks). Prints "pid P tid T" first.
 *   cpu_split split SECS      main -> run_split -> burn_a (7 parts) / burn_b (3 parts) of the
 *                             thread's CPU time, SECS of it; prints {"a_ns", "b_ns"} measured
 *                             with CLOCK_THREAD_CPUTIME_ID (the ground truth of the split)
 *   cpu_split deep DEPTH SECS main -> recurse (DEPTH calls deep) -> spin
 *   cpu_split badfp SECS      main -> spin_bad_fp, which spins with its frame pointer aimed
 *                             at a fake frame whose "return address" is the first instruction
 *                             of never_called (no call precedes it): an unwinder that
 *                             trusts frame pointers sees a caller that is not one
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static volatile unsigned long sink;

/* Pure arithmetic between clock reads, so nearly every sample lands in the burner itself. */
static NOINLINE unsigned long long burn(unsigned long long ns)
{
	unsigned long long t0 = thread_ns(), t;

	do {
		for (int i = 0; i < 200000; i++)
			sink = sink * 2862933555777941757ULL + 3037000493ULL;
		t = thread_ns();
	} while (t - t0 < ns);
	return t - t0;
}

static NOINLINE unsigned long long burn_a(unsigned long long ns)
{
	unsigned long long r = burn(ns);

	sink += r; /* not a tail call: burn_a stays on the stack */
	return r;
}

static NOINLINE unsigned long long burn_b(unsigned long long ns)
{
	unsigned long long r = burn(ns);

	sink += r;
	return r;
}

static NOINLINE void run_split(double secs)
{
	unsigned long long a = 0, b = 0, end = secs * 1e9;

	while (a + b < end) {
		a += burn_a(7000000);
		b += burn_b(3000000);
	}
	printf("{\"a_ns\": %llu, \"b_ns\": %llu}\n", a, b);
}

static NOINLINE void spin(double secs)
{
	burn(secs * 1e9);
	sink++;
}

static NOINLINE int recurse(int depth, double secs)
{
	if (depth <= 1)
		spin(secs);
	else
		recurse(depth - 1, secs);
	return sink++; /* not a tail call */
}

NOINLINE void never_called(void)
{
	sink++;
}

static NOINLINE void spin_bad_fp(double secs)
{
	unsigned long fake[2] = { 0, (unsigned long)&never_called };
	unsigned long long end = thread_ns() + secs * 1e9;

	while (thread_ns() < end) {
		unsigned long n = 2000000, *fp = fake;

		__asm__ volatile("push %%rbp\n\t"
				 "mov %0, %%rbp\n\t"
				 "1: dec %1\n\t"
				 "jnz 1b\n\t"
				 "pop %%rbp"
				 : "+r"(fp), "+r"(n)
				 :
				 : "memory");
	}
}

int main(int argc, char **argv)
{
	printf("pid %d tid %ld\n", getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	if (argc == 3 && !strcmp(argv[1], "split"))
		run_split(atof(argv[2]));
	else if (argc == 4 && !strcmp(argv[1], "deep"))
		recurse(atoi(argv[2]), atof(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "badfp"))
		spin_bad_fp(atof(argv[2]));
	else {
		fprintf(stderr, "usage: cpu_split split SECS | deep DEPTH SECS | badfp SECS\n");
		return 2;
	}
	return 0;
}
