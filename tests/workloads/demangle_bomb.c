// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A process a hostile user could run: its hot function's symbol is a demangler bomb
 * (demangle_bomb.h). Prints "pid P", then spins in that function for SECS seconds (default 30).
 *   demangle_bomb [SECS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "demangle_bomb.h"

static volatile unsigned long sink;

/* The symbol is the mangled name, as g++ would give it. */
void hot(double secs) __asm__(DEMANGLE_BOMB_30) __attribute__((noinline));

void hot(double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink = sink * 2862933555777941757ULL + 3037000493ULL;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

int main(int argc, char **argv)
{
	printf("pid %d\n", getpid());
	fflush(stdout);
	hot(argc > 1 ? atof(argv[1]) : 30);
	return 0;
}
