// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of attaching to a process that is busy calling a probed function: it calls
 * cudaStreamQuery of the real libcudart (dlopen'ed: no GPU needed, every call fails fast
 * inside the library) with stream 0x5a in a loop, from before the recorder attaches until
 * stdin closes, so that the probes go in under its feet. For each line read on stdin it
 * makes MARKS calls with stream 0x5b and prints "marked MARKS".
 *
 * Usage: ucall_spin LIBCUDART MARKS     (prints "pid P" first)
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cudart_dl.h"

int main(int argc, char **argv)
{
	stream_query_fn stream_query;
	long marks;

	if (argc != 3 || (marks = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: %s LIBCUDART MARKS\n", argv[0]);
		return 2;
	}
	stream_query = cudart_stream_query(argv[1], argv[0]);
	if (!stream_query)
		return 1;
	printf("pid %d\n", getpid());
	fflush(stdout);
	for (;;) {
		struct pollfd in = { .fd = 0, .events = POLLIN };
		char line[64];

		for (int i = 0; i < 1024; i++)
			stream_query((void *)0x5a);
		if (poll(&in, 1, 0) <= 0)
			continue;
		if (!fgets(line, sizeof(line), stdin))
			return 0;
		for (long i = 0; i < marks; i++)
			stream_query((void *)0x5b);
		printf("marked %ld\n", marks);
		fflush(stdout);
	}
}
