// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fast launching threads whose CUPTI records come late, for the launch join's tests:
 *
 *   cupti_flood THREADS CALLS DELAY_MS SHIM [WAIT_FILE]
 *
 * 1. dlopen()s SHIM (the test variant) and runs its InitializeInjection, as cupti_feed does;
 *    prints {"pid": P} and, given WAIT_FILE, waits for it (a tracer attaches).
 * 2. THREADS threads each make CALLS real cudaLaunchKernel calls (libcudart, probed by the
 *    cuda family; they fail fast here) back to back, timing each (t0 before, t1 after).
 * 3. Waits DELAY_MS (CUPTI's records reach the recorder up to the shim's flush and send
 *    periods late; here as late as asked), then feeds the shim, through the real decode
 *    path, per call the CUpti_ActivityAPI record (start t0+1, end t1-1, the calling thread,
 *    a correlation id of its own) and the kernel it launched, in chunks.
 * 4. Prints {"pid": P, "threads": [{"tid": T, "calls": N, "ns": D}...], "fed": N}.
 */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record_buf.h"

#define CHUNK 2000 /* records per feed: batches leave between chunks */

struct worker {
	pthread_t th;
	uint32_t tid;
	long calls;
	uint64_t *t0, *t1;
	uint64_t ns;
};

static long ncalls;

static void dummy_kernel(void)
{
}

static void *launcher(void *arg)
{
	struct worker *w = arg;
	dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	void *args[1] = { NULL };
	uint64_t start = now();

	w->tid = (uint32_t)gettid();
	for (long i = 0; i < ncalls; i++) {
		w->t0[i] = now();
		(void)cudaLaunchKernel((const void *)dummy_kernel, grid, block, args, 0, NULL);
		w->t1[i] = now();
	}
	w->ns = now() - start;
	w->calls = ncalls;
	return NULL;
}

static void api(const struct worker *w, long i, uint32_t corr)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = w->t0[i] + 1;
	a.end = w->t1[i] - 1;
	a.processId = (uint32_t)getpid();
	a.threadId = w->tid;
	a.correlationId = corr;
	put(&a, sizeof(a));
}

static void kernel(const struct worker *w, long i, uint32_t corr)
{
	CUpti_ActivityKernel10 r;

	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r.start = w->t1[i] + 1000;
	r.end = r.start + 1000;
	r.completed = r.end;
	r.streamId = 7;
	r.contextId = 1;
	r.gridX = r.gridY = r.gridZ = 1;
	r.blockX = 32;
	r.blockY = r.blockZ = 1;
	r.correlationId = corr;
	r.name = "_Z5floodv";
	put(&r, sizeof(r));
}

int main(int argc, char **argv)
{
	int (*init)(void), (*feed)(const uint8_t *, size_t);
	struct timespec pause = { 0, 20000000 }, delay;
	struct worker *w;
	long nthreads, fed = 0, n = 0;
	uint32_t corr = 1;
	void *h;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: cupti_flood THREADS CALLS DELAY_MS SHIM [WAIT_FILE]\n");
		return 2;
	}
	nthreads = atol(argv[1]);
	ncalls = atol(argv[2]);
	delay = (struct timespec){ atol(argv[3]) / 1000, atol(argv[3]) % 1000 * 1000000 };
	h = dlopen(argv[4], RTLD_NOW | RTLD_LOCAL);
	if (!h || nthreads < 1 || ncalls < 1) {
		fprintf(stderr, "cupti_flood: %s\n", h ? "bad counts" : dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	*(void **)&feed = dlsym(h, "bpfsight_shim_test_feed");
	if (!init || !feed) {
		fprintf(stderr, "cupti_flood: %s lacks the shim's entry points\n", argv[4]);
		return 1;
	}
	init();
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	for (struct stat st; argc == 6 && stat(argv[5], &st);)
		nanosleep(&pause, NULL);
	w = calloc(nthreads, sizeof(*w));
	for (long t = 0; w && t < nthreads; t++) {
		w[t].t0 = malloc(ncalls * sizeof(uint64_t));
		w[t].t1 = malloc(ncalls * sizeof(uint64_t));
		if (!w[t].t0 || !w[t].t1 || pthread_create(&w[t].th, NULL, launcher, &w[t])) {
			fprintf(stderr, "cupti_flood: cannot start thread %ld\n", t);
			return 1;
		}
	}
	for (long t = 0; t < nthreads; t++)
		pthread_join(w[t].th, NULL);
	nanosleep(&delay, NULL);
	/* Calls in the order they were made, the threads' interleaved as CUPTI would send them. */
	for (long i = 0; i < ncalls; i++) {
		for (long t = 0; t < nthreads; t++, corr++) {
			api(&w[t], i, corr);
			kernel(&w[t], i, corr);
			n += 2;
		}
		if (n >= CHUNK || i == ncalls - 1) {
			int got = feed(buf, len);

			fed += got > 0 ? got : 0;
			len = 0;
			n = 0;
			nanosleep(&pause, NULL);
		}
	}
	printf("{\"pid\": %d, \"threads\": [", (int)getpid());
	for (long t = 0; t < nthreads; t++)
		printf("%s{\"tid\": %u, \"calls\": %ld, \"ns\": %llu}", t ? ", " : "", w[t].tid,
		       w[t].calls, (unsigned long long)w[t].ns);
	printf("], \"fed\": %ld}\n", fed);
	return 0;
}
