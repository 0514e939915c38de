// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A program whose ticks the toy shim family records: `toyshim_workload N` waits (at most
 * 30 s) until a tracer wants ticks (the shim, preloaded, is told by its semaphore), then makes
 * N ticks named "alpha" and "beta" in turn, with values 1..N, and prints
 * "pid P ticks N alpha A beta B sum S" (what it wrote) before it exits.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int (*on)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "bpfsight_toyshim_on");
	int (*tick)(const char *, uint64_t) =
		(int (*)(const char *, uint64_t))dlsym(RTLD_DEFAULT, "bpfsight_toyshim_tick");
	long n = argc > 1 ? atol(argv[1]) : 10, wrote = 0, alpha = 0, beta = 0;
	unsigned long long sum = 0;
	struct timespec ms = { 0, 1000000 };

	if (!on || !tick) {
		fprintf(stderr, "toyshim_workload: no toy shim preloaded\n");
		return 2;
	}
	for (int i = 0; i < 30000 && !on(); i++)
		nanosleep(&ms, NULL);
	for (long i = 1; i <= n; i++) {
		const char *name = i % 2 ? "alpha" : "beta";

		if (!tick(name, (uint64_t)i))
			continue;
		wrote++;
		sum += (unsigned long long)i;
		if (i % 2)
			alpha++;
		else
			beta++;
	}
	printf("pid %d ticks %ld alpha %ld beta %ld sum %llu\n", (int)getpid(), wrote, alpha, beta,
	       sum);
	return 0;
}
