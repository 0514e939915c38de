// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How long record --inject takes a thread away from its own code (bench/bench_inject.py):
 * the main thread spins reading CLOCK_MONOTONIC and keeps the longest gap between two
 * reads, while a second thread waits on stdin. Prints "ready PID"; on a line "report" it
 * prints {"max_gap_ns": G, "reads": N} for the time since the previous report and starts
 * over; on EOF it exits 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_ulong max_gap, reads;
static atomic_int reset, done;

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static void *control(void *arg)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "report", 6))
			continue;
		printf("{\"max_gap_ns\": %lu, \"reads\": %lu}\n", atomic_load(&max_gap),
		       atomic_load(&reads));
		fflush(stdout);
		atomic_store(&reset, 1);
	}
	atomic_store(&done, 1);
	return NULL;
}

int main(void)
{
	unsigned long last, t, gap;
	pthread_t th;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pthread_create(&th, NULL, control, NULL);
	last = now_ns();
	while (!atomic_load_explicit(&done, memory_order_relaxed)) {
		t = now_ns();
		gap = t - last;
		last = t;
		if (atomic_exchange_explicit(&reset, 0, memory_order_relaxed)) {
			atomic_store(&max_gap, 0);
			atomic_store(&reads, 0);
			continue;
		}
		if (gap > atomic_load_explicit(&max_gap, memory_order_relaxed))
			atomic_store(&max_gap, gap);
		atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
	}
	pthread_join(th, NULL);
	return 0;
}
