// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cost of one nvtxRangePushA + nvtxRangePop pair, for the shim's numbers (no injection,
 * shim idle, shim recording), and its stress test with several threads.
 *
 *   nvtx_bench [--iters N] [--threads T] [--marks] [--pace MS] [--wait-file PATH] [--fork]
 *
 * Loads the injection (nvtxInitialize), prints {"pid": P}, waits for PATH if given. Then
 * each of T threads (default 1) warms up with N/10 pairs, waits for the others, and times N
 * pairs (default 1000000) of push A "bench" / pop on CLOCK_MONOTONIC. With --marks, after
 * every 1000th timed pair (I = 999, 1999, ...) a thread K (from 0) also marks A "m-K-I": a
 * new string each time, interned by the threads concurrently (the stress test; it costs
 * the timing about 0.4 ns per pair). --pace MS sleeps MS ms after every 1000th timed pair
 * (a run long enough for recordings to come and go meanwhile). With --fork the process forks once after the wait,
 * and the child does all of that too, at the same time (the parent waits for it; exit 1 if
 * it failed). Each prints
 * {"pid": P, "iters": N, "threads": T, "ns_per_pair": X, "tids": [...]}, X the mean over
 * threads of each thread's time per pair.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

static long iters = 1000000;
static int marks, pace_ms;
static pthread_barrier_t start;

struct worker {
	int k;
	pid_t tid;
	double ns;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char mark[64];
	double t0;
	long i;

	w->tid = gettid();
	for (i = 0; i < iters / 10; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
	}
	pthread_barrier_wait(&start);
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
		if (marks && i % 1000 == 999) {
			snprintf(mark, sizeof(mark), "m-%d-%ld", w->k, i);
			nvtxMarkA(mark);
		}
		if (pace_ms && i % 1000 == 999) {
			struct timespec ts = { pace_ms / 1000, (pace_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	w->ns = (now_ns() - t0) / (double)iters;
	return NULL;
}

int main(int argc, char **argv)
{
	const struct timespec tick = { 0, 10000000 };
	struct worker w[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	const char *wait_file = NULL;
	int threads = 1, do_fork = 0, status, k;
	pid_t child = 0;
	double sum = 0;
	struct stat st;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--iters") && k + 1 < argc) {
			iters = atol(argv[++k]);
		} else if (!strcmp(argv[k], "--threads") && k + 1 < argc) {
			threads = atoi(argv[++k]);
		} else if (!strcmp(argv[k], "--marks")) {
			marks = 1;
		} else if (!strcmp(argv[k], "--pace") && k + 1 < argc) {
			pace_ms = atoi(argv[++k]);
		} else if (!strcmp(argv[k], "--wait-file") && k + 1 < argc) {
			wait_file = argv[++k];
		} else if (!strcmp(argv[k], "--fork")) {
			do_fork = 1;
		} else {
			fprintf(stderr, "usage: nvtx_bench [--iters N] [--threads T] [--marks] "
					"[--pace MS] [--wait-file PATH] [--fork]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || iters < 1) {
		fprintf(stderr, "nvtx_bench: --threads 1..%d, --iters >= 1\n", MAX_THREADS);
		return 2;
	}
	nvtxInitialize(NULL);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (wait_file && stat(wait_file, &st))
		nanosleep(&tick, NULL);
	if (do_fork && (child = fork()) < 0) {
		perror("nvtx_bench: fork");
		return 1;
	}
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (k = 0; k < threads; k++) {
		w[k].k = k;
		if (pthread_create(&th[k], NULL, run, &w[k])) {
			fprintf(stderr, "nvtx_bench: pthread_create failed\n");
			return 1;
		}
	}
	for (k = 0; k < threads; k++) {
		pthread_join(th[k], NULL);
		sum += w[k].ns;
	}
	printf("{\"pid\": %d, \"iters\": %ld, \"threads\": %d, \"ns_per_pair\": %.2f, "
	       "\"tids\": [",
	       (int)getpid(), iters, threads, sum / threads);
	for (k = 0; k < threads; k++)
		printf("%s%d", k ? ", " : "", (int)w[k].tid);
	printf("]}\n");
	fflush(stdout);
	if (child > 0 &&
	    (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)))
		return 1;
	return 0;
}
