// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Context-switch load for the sched family's benchmark (bench/run_bench.py): two threads
 * pass a byte back and forth over two pipes, each blocking in read() until the other
 * writes. Both threads are pinned to one CPU, so every round trip is exactly two context
 * switches and two wakeups there, whatever else the machine runs, and the rate measures
 * the switch path (where sched's probes sit) rather than cross-CPU wakeup latency.
 *
 *   pingpong [-d SECONDS | -n ROUNDTRIPS] [-c CPU]
 *
 * Prints one JSON object: round trips made, seconds, round trips/s.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int xfer(int fd, int write_it)
{
	char byte = 0;
	ssize_t n;

	do
		n = write_it ? write(fd, &byte, 1) : read(fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/* The echo side: returns each byte until the pipe closes. */
static void *echo(void *arg)
{
	while (!xfer(ping[0], 0))
		if (xfer(pong[1], 1))
			break;
	return NULL;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int main(int argc, char **argv)
{
	double seconds = 0;
	unsigned long long limit = 0, n = 0;
	int cpu = -1, c, err;
	uint64_t start, deadline, end;
	pthread_t thread;
	char *stop;

	while ((c = getopt(argc, argv, "d:n:c:h")) != -1) {
		switch (c) {
		case 'd':
			seconds = strtod(optarg, &stop);
			if (*stop || !(seconds > 0))
				goto bad;
			break;
		case 'n':
			limit = strtoull(optarg, &stop, 10);
			if (*stop || !limit)
				goto bad;
			break;
		case 'c':
			cpu = strtol(optarg, &stop, 10);
			if (*stop || cpu < 0)
				goto bad;
			break;
		case 'h':
			printf("Usage: pingpong [-d SECONDS | -n ROUNDTRIPS] [-c CPU]\n\n"
			       "Two threads pinned to one CPU (default: the one it starts on)\n"
			       "pass a byte over two pipes; prints round trips/s as JSON.\n");
			return 0;
		default:
			goto usage;
		}
	}
	if (optind != argc || (seconds && limit))
		goto usage;
	if (!seconds && !limit)
		seconds = 1;
	if (cpu < 0)
		cpu = sched_getcpu();
	/* Pinned before the echo thread exists: it inherits the mask. */
	err = pin(cpu < 0 ? 0 : cpu);
	if (err) {
		fprintf(stderr, "pingpong: cannot pin to CPU %d: %s\n", cpu, strerror(-err));
		return 1;
	}
	if (pipe(ping) || pipe(pong)) {
		perror("pingpong: pipe");
		return 1;
	}
	err = pthread_create(&thread, NULL, echo, NULL);
	if (err) {
		fprintf(stderr, "pingpong: pthread_create: %s\n", strerror(err));
		return 1;
	}
	start = now_ns();
	deadline = seconds ? start + (uint64_t)(seconds * 1e9) : UINT64_MAX;
	do {
		if (xfer(ping[1], 1) || xfer(pong[0], 0)) {
			perror("pingpong: pipe transfer");
			return 1;
		}
		n++;
	} while ((!limit || n < limit) && (limit || (n & 63) || now_ns() < deadline));
	end = now_ns();
	close(ping[1]);
	pthread_join(thread, NULL);
	printf("{\"cpu\": %d, \"round_trips\": %llu, \"seconds\": %.6f, "
	       "\"round_trips_per_s\": %.0f}\n",
	       cpu, n, (end - start) / 1e9, n * 1e9 / (end - start));
	return fflush(stdout) ? 1 : 0;

bad:
	fprintf(stderr, "pingpong: bad value '%s' for -%c\n", optarg, c);
usage:
	fprintf(stderr, "Usage: pingpong [-d SECONDS | -n ROUNDTRIPS] [-c CPU]\n");
	return 2;
}
