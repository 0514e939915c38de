// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload of the uprobe families' per-thread slots (bpf/ucall.bpf.h): waves of threads
 * whose tids all fall on the same slot (tid % MOD equal), more of them than a thread may
 * probe, each calling cudaStreamQuery of the real libcudart (dlopen'ed: no GPU needed, every
 * call fails fast inside the library) CALLS times with a stream value of its own. Root: the
 * tids are chosen by writing /proc/sys/kernel/ns_last_pid before each pthread_create; a
 * thread that got another tid (another process forked in between) is let go without a call.
 *
 * Usage: ucall_threads LIBCUDART THREADS CALLS MOD
 * Prints "pid P" and "residue R", then waits for a line on stdin before each step:
 *   wave W: THREADS threads placed, each makes its calls and prints "tid W I TID STREAM";
 *   then "wave W called" (the threads are alive and idle), a line; they exit, "wave W exited".
 * Two waves, then "done". A wave's tids differ from the previous wave's.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cudart_dl.h"

#define MAX_THREADS 32

static stream_query_fn stream_query;
static int calls;
static pthread_barrier_t called, leave;

struct worker {
	pthread_t th;
	int wave, idx;
	pid_t tid;
	int keep; /* main's verdict: 1 = the tid fits, make the calls */
	sem_t placed, verdict;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	w->tid = syscall(SYS_gettid);
	sem_post(&w->placed);
	sem_wait(&w->verdict);
	if (!w->keep)
		return NULL;
	for (int i = 0; i < calls; i++)
		stream_query((void *)(0x51000ul + w->wave * 0x100 + w->idx));
	pthread_barrier_wait(&called);
	pthread_barrier_wait(&leave);
	return NULL;
}

static int set_last_pid(pid_t pid)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
	int err;

	if (!f)
		return -errno;
	err = fprintf(f, "%d", pid) < 0 ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static void wait_line(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		exit(0);
}

/* Start a thread with a tid = residue (mod MOD) above *next; 0 or a negative errno. */
static int place(struct worker *w, long residue, long mod, long pid_max, long *next)
{
	for (int tries = 0; tries < 1000; tries++) {
		pid_t want = residue + *next * mod;
		int err;

		if (want >= pid_max)
			return -ERANGE;
		(*next)++;
		if (kill(want, 0) == 0 || errno != ESRCH)
			continue; /* in use */
		err = set_last_pid(want - 1);
		if (err)
			return err;
		sem_init(&w->placed, 0, 0);
		sem_init(&w->verdict, 0, 0);
		if (pthread_create(&w->th, NULL, work, w))
			return -EAGAIN;
		sem_wait(&w->placed);
		w->keep = w->tid % mod == residue;
		sem_post(&w->verdict);
		if (w->keep)
			return 0;
		pthread_join(w->th, NULL);
	}
	return -EAGAIN;
}

int main(int argc, char **argv)
{
	struct worker ws[MAX_THREADS];
	long nthreads, mod, residue, pid_max = 32768, next = 1;
	FILE *f;

	if (argc != 5) {
		fprintf(stderr, "usage: %s LIBCUDART THREADS CALLS MOD\n", argv[0]);
		return 2;
	}
	nthreads = atol(argv[2]);
	calls = atoi(argv[3]);
	mod = atol(argv[4]);
	if (nthreads < 1 || nthreads > MAX_THREADS || calls < 1 || mod < 2) {
		fprintf(stderr, "%s: bad arguments\n", argv[0]);
		return 2;
	}
	stream_query = cudart_stream_query(argv[1], argv[0]);
	if (!stream_query)
		return 1;
	f = fopen("/proc/sys/kernel/pid_max", "r");
	if (f) {
		if (fscanf(f, "%ld", &pid_max) != 1)
			pid_max = 32768;
		fclose(f);
	}
	/* Away from our own tid's slot, and from the end of the array (no wrap to follow). */
	residue = (getpid() + mod / 2) % (mod - 8);
	printf("pid %d\nresidue %ld\n", getpid(), residue);
	fflush(stdout);
	for (int wave = 1; wave <= 2; wave++) {
		wait_line();
		pthread_barrier_init(&called, NULL, nthreads + 1);
		pthread_barrier_init(&leave, NULL, nthreads + 1);
		for (int i = 0; i < nthreads; i++) {
			int err;

			ws[i].wave = wave;
			ws[i].idx = i;
			err = place(&ws[i], residue, mod, pid_max, &next);
			if (err) {
				fprintf(stderr,
					"%s: cannot start a thread with a tid = %ld mod %ld: %s\n",
					argv[0], residue, mod, strerror(-err));
				return 1;
			}
		}
		pthread_barrier_wait(&called);
		for (int i = 0; i < nthreads; i++)
			printf("tid %d %d %d %#lx\n", wave, i, ws[i].tid,
			       0x51000ul + wave * 0x100 + i);
		printf("wave %d called\n", wave);
		fflush(stdout);
		wait_line();
		pthread_barrier_wait(&leave);
		for (int i = 0; i < nthreads; i++)
			pthread_join(ws[i].th, NULL);
		pthread_barrier_destroy(&called);
		pthread_barrier_destroy(&leave);
		printf("wave %d exited\n", wave);
		fflush(stdout);
	}
	wait_line();
	printf("done\n");
	return 0;
}
