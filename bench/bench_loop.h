/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Timed call loops for the per-probe benchmark targets (probe_target.c, cuda_loop.c):
 * each named function is called in a tight loop for -m milliseconds, the functions taking
 * turns, -r times over, so that noise from the rest of the machine spreads over all of them
 * alike. Prints one JSON object: per function, ns per call and calls made in each round.
 *
 *   TARGET [-m MS] [-r ROUNDS] [-o FILE] [NAME...]     (default: every function)
 *
 * The clock (BENCH_CLOCK, below) is read once per BATCH calls (by default the vDSO's
 * CLOCK_MONOTONIC, no syscall), so an untraced call costs its own time plus ~1/BATCH of a
 * clock read; the benchmark only ever reports the difference between a traced and an
 * untraced run of the same loop.
 *
 * "int3" says whether the probe site held a breakpoint before or after the rounds: a uprobe
 * anyone attached to that file, this process's own tracer or another one. An untraced run
 * with int3 was not untraced (the uprobes of a tracer that exits can outlive its process
 * by seconds while they are unregistered, where `bpftool perf list` no longer sees them).
 */
#ifndef BPFSIGHT_BENCH_LOOP_H
#define BPFSIGHT_BENCH_LOOP_H

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A target may time its calls by its thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the
 * probes' traps are charged to it, time spent waiting for a CPU is not) where the machine is
 * shared; a syscall per read instead of the vDSO, the same in every configuration. */
#ifndef BENCH_CLOCK
#define BENCH_CLOCK CLOCK_MONOTONIC
#endif

#define BENCH_BATCH	 16
#define BENCH_MAX_ROUNDS 100
#define BENCH_WARMUP	 200 /* calls per function before the first round (first hits) */

struct bench_fn {
	const char *name;
	long (*fn)(long);
	const void *site; /* where a probe on it would sit (the traced function's entry) */
};

/* x86's breakpoint, which the kernel writes over a uprobe's instruction. */
static inline int bench_int3_at(const void *site)
{
	return site && *(const volatile unsigned char *)site == 0xcc;
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(BENCH_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Call FN for at least MS milliseconds; returns the calls made and their time in *ns. */
static inline uint64_t bench_run_fn(long (*volatile fn)(long), double ms, uint64_t *ns)
{
	uint64_t start = bench_now_ns(), deadline = start + (uint64_t)(ms * 1e6), now, n = 0;
	long acc = 0;

	do {
		for (int i = 0; i < BENCH_BATCH; i++)
			acc += fn((long)n + i);
		n += BENCH_BATCH;
		now = bench_now_ns();
	} while (now < deadline);
	__asm__ __volatile__("" : : "r"(acc) : "memory");
	*ns = now - start;
	return n;
}

static inline void bench_usage(FILE *f, const char *prog, const struct bench_fn *fns, int nfns)
{
	fprintf(f,
		"Usage: %s [-m MS] [-r ROUNDS] [-o FILE] [NAME...]\n\n"
		"Calls each NAME in a tight loop for MS milliseconds (default 200), in turn,\n"
		"ROUNDS times (default 5), and prints ns per call as JSON (to FILE if given).\n"
		"Functions:",
		prog);
	for (int i = 0; i < nfns; i++)
		fprintf(f, " %s", fns[i].name);
	fprintf(f, "\n");
}

static inline int bench_loop_main(int argc, char **argv, const struct bench_fn *fns, int nfns)
{
	static uint64_t calls[BENCH_MAX_ROUNDS][16], ns[BENCH_MAX_ROUNDS][16];
	int int3[16] = { 0 };
	const char *out_path = NULL;
	double ms = 200;
	long rounds = 5;
	int pick[16], npick = 0, c;
	char *end;
	FILE *out = stdout;

	if (nfns > 16)
		return 2;
	while ((c = getopt(argc, argv, "m:r:o:h")) != -1) {
		switch (c) {
		case 'm':
			ms = strtod(optarg, &end);
			if (*end || !(ms > 0)) {
				fprintf(stderr, "%s: bad -m '%s'\n", argv[0], optarg);
				return 2;
			}
			break;
		case 'r':
			rounds = strtol(optarg, &end, 10);
			if (*end || rounds < 1 || rounds > BENCH_MAX_ROUNDS) {
				fprintf(stderr, "%s: bad -r '%s' (1..%d)\n", argv[0], optarg,
					BENCH_MAX_ROUNDS);
				return 2;
			}
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			bench_usage(stdout, argv[0], fns, nfns);
			return 0;
		default:
			bench_usage(stderr, argv[0], fns, nfns);
			return 2;
		}
	}
	for (int a = optind; a < argc; a++) {
		int i;

		for (i = 0; i < nfns && strcmp(argv[a], fns[i].name); i++)
			;
		if (i == nfns || npick == 16) {
			fprintf(stderr, "%s: unknown function '%s'\n", argv[0], argv[a]);
			bench_usage(stderr, argv[0], fns, nfns);
			return 2;
		}
		pick[npick++] = i;
	}
	if (!npick)
		for (int i = 0; i < nfns; i++)
			pick[npick++] = i;

	for (int p = 0; p < npick; p++) {
		int3[p] = bench_int3_at(fns[pick[p]].site);
		for (long i = 0; i < BENCH_WARMUP; i++)
			fns[pick[p]].fn(i);
	}
	for (long r = 0; r < rounds; r++)
		for (int p = 0; p < npick; p++)
			calls[r][p] = bench_run_fn(fns[pick[p]].fn, ms, &ns[r][p]);
	for (int p = 0; p < npick; p++)
		int3[p] |= bench_int3_at(fns[pick[p]].site);

	if (out_path && !(out = fopen(out_path, "w"))) {
		fprintf(stderr, "%s: cannot write %s: %s\n", argv[0], out_path, strerror(errno));
		return 1;
	}
	fprintf(out, "{\"ms\": %g, \"rounds\": %ld, \"fns\": {", ms, rounds);
	for (int p = 0; p < npick; p++) {
		fprintf(out, "%s\"%s\": {\"int3\": %s, \"ns_per_call\": [", p ? ", " : "",
			fns[pick[p]].name, int3[p] ? "true" : "false");
		for (long r = 0; r < rounds; r++)
			fprintf(out, "%s%.3f", r ? ", " : "", (double)ns[r][p] / calls[r][p]);
		fprintf(out, "], \"calls\": [");
		for (long r = 0; r < rounds; r++)
			fprintf(out, "%s%llu", r ? ", " : "", (unsigned long long)calls[r][p]);
		fprintf(out, "]}");
	}
	fprintf(out, "}}\n");
	if (fflush(out) || (out != stdout && fclose(out))) {
		fprintf(stderr, "%s: write error\n", argv[0]);
		return 1;
	}
	return 0;
}

#endif /* BPFSIGHT_BENCH_LOOP_H */
