// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A native job for the verdict's ledger (tests/e2e/test_ledger_jobs.py): four threads, w0..w3,
 * share one pthread mutex, each holding it 2 ms (asleep) and then sleeping 2 ms without it:
 * about half of their time is spent waiting for the mutex, at lock_step's pthread_mutex_lock.
 *
 * Like ledger_jobs.py: prints {"pid": PID} when it runs, then each line read on stdin prints
 * the truth so far, {"t": ns, "threads": {TID: {"name": "w0", "regions": {"lock": [WALL, CPU,
 * READY]}, "cpu_ns": ns, "run_delay_ns": ns}}}: the wall time each thread spent in
 * pthread_mutex_lock, and of it on a CPU and ready to run (its schedstat at the edges).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 4

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

struct worker {
	pthread_t thread;
	_Atomic int tid;
	_Atomic uint64_t wall, cpu, ready; /* in pthread_mutex_lock */
};

static struct worker workers[NTHREADS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread TID's time on a CPU and ready to run, from its schedstat. */
static void schedstat(int tid, uint64_t *run, uint64_t *delay)
{
	char path[64];
	unsigned long long r = 0, d = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &r, &d) != 2)
			r = d = 0;
		fclose(f);
	}
	*run = r;
	*delay = d;
}

static void nap_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static __attribute__((noinline)) void lock_step(struct worker *w)
{
	uint64_t t0, r0, d0, r1, d1;

	schedstat(w->tid, &r0, &d0);
	t0 = now_ns();
	pthread_mutex_lock(&mutex); /* L:mutex_lock */
	w->wall += now_ns() - t0;
	schedstat(w->tid, &r1, &d1);
	w->cpu += r1 - r0;
	w->ready += d1 - d0;
	nap_ms(2);
	pthread_mutex_unlock(&mutex);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[16];

	w->tid = (int)syscall(SYS_gettid);
	snprintf(name, sizeof(name), "w%d", (int)(w - workers));
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		lock_step(w);
		nap_ms(2);
	}
	return NULL;
}

int main(void)
{
	char line[64];

	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&workers[i].thread, NULL, work, &workers[i]);
	for (int i = 0; i < NTHREADS; i++)
		while (!workers[i].tid)
			nap_ms(1);
	printf("{\"pid\": %d}\n", getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		printf("{\"t\": %llu, \"threads\": {", (unsigned long long)now_ns());
		for (int i = 0; i < NTHREADS; i++) {
			uint64_t run, delay;

			schedstat(workers[i].tid, &run, &delay);
			printf("%s\"%d\": {\"name\": \"w%d\", \"regions\": {\"lock\": [%llu, %llu, "
			       "%llu]}, \"cpu_ns\": %llu, \"run_delay_ns\": %llu}",
			       i ? ", " : "", workers[i].tid, i,
			       (unsigned long long)workers[i].wall,
			       (unsigned long long)workers[i].cpu,
			       (unsigned long long)workers[i].ready, (unsigned long long)run,
			       (unsigned long long)delay);
		}
		printf("}}\n");
		fflush(stdout);
	}
	return 0;
}
