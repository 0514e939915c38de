// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Syscall load generator for the record-pipeline benchmark (bench/run_bench.py).
 *
 * T threads each call syscall(SYS_getppid) in a tight loop, for D seconds or until the
 * threads together have made N calls, optionally paced to a total target rate by a
 * busy-wait pacer (no sleeping: a sleep would add nanosleep/futex syscalls to the load
 * and its wake-up latency would make the rate lumpy). getppid is the cheapest syscall
 * there is, so the tracer's per-event cost dominates what is measured.
 *
 *   loadgen [-t THREADS] [-d SECONDS | -n CALLS] [-r RATE] [--wait-stdin]
 *
 * Prints one JSON object on stdout: calls made, seconds, calls/s, and per thread.
 * The only syscalls besides getppid are the startup, clone and final write ones:
 * clock_gettime goes through the vDSO.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <getopt.h>
#include <sys/syscall.h>

/* Unpaced threads look at the clock once per this many calls. */
#define CLOCK_EVERY 256

struct worker {
	pthread_t thread;
	uint64_t max_calls;   /* 0: no limit */
	uint64_t interval_ns; /* 0: unpaced */
	uint64_t calls;
	uint64_t start_ns, end_ns;
};

static uint64_t duration_ns;
static uint64_t go_ns; /* common start time, set before the threads start */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t deadline = duration_ns ? go_ns + duration_ns : UINT64_MAX;
	uint64_t limit = w->max_calls ? w->max_calls : UINT64_MAX;
	uint64_t n = 0, now = now_ns();

	w->start_ns = now;
	if (w->interval_ns) {
		/*
		 * Call i is due at start + i * interval. A thread that falls behind catches up
		 * at full speed, so the average rate is the target as long as the machine can
		 * sustain it; a run that cannot shows a lower calls_per_s.
		 */
		uint64_t due = now;

		while (n < limit) {
			while ((now = now_ns()) < due)
				__asm__ __volatile__("" ::: "memory");
			if (now >= deadline)
				break;
			syscall(SYS_getppid);
			n++;
			due += w->interval_ns;
		}
	} else {
		while (n < limit) {
			uint64_t batch = limit - n < CLOCK_EVERY ? limit - n : CLOCK_EVERY;

			if (duration_ns && now_ns() >= deadline)
				break;
			for (uint64_t i = 0; i < batch; i++)
				syscall(SYS_getppid);
			n += batch;
		}
	}
	w->end_ns = now_ns();
	w->calls = n;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: loadgen [-t THREADS] [-d SECONDS | -n CALLS] [-r RATE] [--wait-stdin]\n"
		   "\n"
		   "THREADS threads make raw getppid syscalls in a tight loop and print one JSON\n"
		   "object: calls made and calls/s.\n"
		   "\n"
		   "  -t, --threads T   threads (default 1)\n"
		   "  -d, --duration S  run for S seconds (fractions allowed; default 1)\n"
		   "  -n, --calls N     stop after N calls in all (split evenly over the threads)\n"
		   "  -r, --rate R      target rate, calls/s over all threads (busy-wait pacer;\n"
		   "                    default: as fast as possible)\n"
		   "      --wait-stdin  start when a byte (or EOF) arrives on stdin\n"
		   "  -h, --help        this help\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'd' },
		{ "calls", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "wait-stdin", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long threads = 1;
	double seconds = 0, rate = 0;
	unsigned long long total_calls = 0;
	int wait_stdin = 0, c;
	struct worker *w;
	uint64_t calls = 0, first = UINT64_MAX, last = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "t:d:n:r:h", opts, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 't':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > 1024)
				goto bad;
			break;
		case 'd':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0))
				goto bad;
			break;
		case 'n':
			total_calls = strtoull(optarg, &end, 10);
			if (*end || errno || !total_calls)
				goto bad;
			break;
		case 'r':
			rate = strtod(optarg, &end);
			if (*end || !(rate > 0))
				goto bad;
			break;
		case 'w':
			wait_stdin = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "loadgen: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (seconds && total_calls) {
		fprintf(stderr, "loadgen: give -d or -n, not both\n");
		return 2;
	}
	if (!seconds && !total_calls)
		seconds = 1;
	duration_ns = (uint64_t)(seconds * 1e9);

	w = calloc(threads, sizeof(*w));
	if (!w) {
		perror("loadgen: calloc");
		return 1;
	}
	for (long i = 0; i < threads; i++) {
		if (total_calls)
			w[i].max_calls = total_calls / threads +
					 ((unsigned long long)i < total_calls % threads);
		if (rate)
			w[i].interval_ns = (uint64_t)(1e9 * threads / rate);
		if (rate && !w[i].interval_ns)
			w[i].interval_ns = 1;
	}
	if (wait_stdin) {
		char byte;

		while (read(STDIN_FILENO, &byte, 1) < 0 && errno == EINTR)
			;
	}
	go_ns = now_ns();
	for (long i = 0; i < threads; i++) {
		int err = pthread_create(&w[i].thread, NULL, run, &w[i]);

		if (err) {
			fprintf(stderr, "loadgen: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long i = 0; i < threads; i++)
		pthread_join(w[i].thread, NULL);

	for (long i = 0; i < threads; i++) {
		calls += w[i].calls;
		if (w[i].start_ns < first)
			first = w[i].start_ns;
		if (w[i].end_ns > last)
			last = w[i].end_ns;
	}
	printf("{\"pid\": %d, \"threads\": %ld, \"target_rate\": %.0f, \"calls\": %llu, "
	       "\"seconds\": %.6f, \"calls_per_s\": %.0f, \"per_thread\": [",
	       getpid(), threads, rate, (unsigned long long)calls, (last - first) / 1e9,
	       last > first ? calls * 1e9 / (last - first) : 0.0);
	for (long i = 0; i < threads; i++)
		printf("%s{\"calls\": %llu, \"seconds\": %.6f}", i ? ", " : "",
		       (unsigned long long)w[i].calls, (w[i].end_ns - w[i].start_ns) / 1e9);
	printf("]}\n");
	free(w);
	return fflush(stdout) ? 1 : 0;

bad:
	fprintf(stderr, "loadgen: bad value '%s' for -%c\n", optarg, c);
	usage(stderr);
	return 2;
}
