// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload with an exactly known syscall mix: N getppid and M nanosleep(SLEEP_US),
 * made through syscall() so libc adds nothing. Options:
 *   --wait-stdin   block on a read of stdin before starting (for attaching with -p)
 *   --fork         a child process repeats the same calls (launch mode follows children)
 *   --threads T    T threads each make the calls (pthread names "worker-I")
 *   --exit CODE    exit with CODE
 *   --kill-self    end by SIGKILL (exit status 137 through bpfsight)
 *   --sched        (one thread) also print the kernel's own accounting of the calls, the
 *                  ground truth for the sched family: "sched {JSON}" with t0, t1 (CLOCK_MONOTONIC
 *                  ns around the calls), the context switches and preemptions (nvcsw + nivcsw,
 *                  nivcsw: getrusage RUSAGE_THREAD) between t0 and t1 as [at least, at most]
 *                  (counted inside and outside the clock reads: a switch between a clock read
 *                  and a count is in one and not the other), cpu_ns (CLOCK_THREAD_CPUTIME_ID)
 *                  and delay_ns (time runnable, waiting for a CPU: run_delay of
 *                  /proc/thread-self/schedstat) over the calls
 *   --blocks       (one thread) also print "blocks B": the times the nanosleeps went to sleep
 *                  (the thread's voluntary context switches over them, getrusage RUSAGE_THREAD
 *                  around the sleeps, no call between). On a loaded machine a sleep can be
 *                  preempted after it set its sleeping state and its timer fire before it runs
 *                  again: it returns without having slept, and osrt's blocked mode, which
 *                  sees calls by their sleeps, rightly does not see it.
 * Prints "pid P" (and "child C" with --fork) on stdout.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static long n_getppid, n_sleep, sleep_us = 1000;
static int blocks;    /* --blocks */
static long pingpong; /* --pingpong */
static _Atomic int pp_word;

static void calls(void)
{
	struct timespec ts = { .tv_sec = sleep_us / 1000000,
			       .tv_nsec = (sleep_us % 1000000) * 1000 };
	struct rusage before, after;

	for (long i = 0; i < n_getppid; i++)
		syscall(SYS_getppid);
	if (blocks)
		getrusage(RUSAGE_THREAD, &before);
	for (long i = 0; i < n_sleep; i++)
		syscall(SYS_nanosleep, &ts, NULL);
	if (blocks) {
		getrusage(RUSAGE_THREAD, &after);
		printf("blocks %ld\n", after.ru_nvcsw - before.ru_nvcsw);
		fflush(stdout);
	}
}

static void *waker(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_futex, &pp_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

static void ping_pong(void)
{
	struct rusage before, after;
	pthread_t t;

	if (pthread_create(&t, NULL, waker, NULL))
		exit(4);
	getrusage(RUSAGE_THREAD, &before);
	for (long i = 0; i < pingpong; i++)
		syscall(SYS_futex, &pp_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	getrusage(RUSAGE_THREAD, &after);
	printf("pingpong %ld\n", after.ru_nvcsw - before.ru_nvcsw);
	fflush(stdout);
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	calls();
	return NULL;
}

struct acct {
	long switches, preemptions;
	unsigned long long cpu_ns, delay_ns;
};

static unsigned long long clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void thread_acct(struct acct *a)
{
	unsigned long long run_ns = 0;
	struct rusage ru;
	FILE *f;

	getrusage(RUSAGE_THREAD, &ru);
	a->switches = ru.ru_nvcsw + ru.ru_nivcsw;
	a->preemptions = ru.ru_nivcsw;
	a->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	a->delay_ns = 0;
	f = fopen("/proc/thread-self/schedstat", "r");
	if (!f || fscanf(f, "%llu %llu", &run_ns, &a->delay_ns) != 2)
		a->delay_ns = ~0ULL; /* says so in the output rather than a plausible 0 */
	if (f)
		fclose(f);
}

/* calls() between two clock reads, each with the thread's counts on both sides of it. */
static void sched_calls(void)
{
	struct acct a, b, c, d;
	unsigned long long t0, t1;

	thread_acct(&a);
	t0 = clock_ns(CLOCK_MONOTONIC);
	thread_acct(&b);
	calls();
	thread_acct(&c);
	t1 = clock_ns(CLOCK_MONOTONIC);
	thread_acct(&d);
	printf("sched {\"t0\": %llu, \"t1\": %llu, \"switches\": [%ld, %ld], "
	       "\"preemptions\": [%ld, %ld], \"cpu_ns\": %llu, \"delay_ns\": %llu}\n",
	       t0, t1, c.switches - b.switches, d.switches - a.switches,
	       c.preemptions - b.preemptions, d.preemptions - a.preemptions, c.cpu_ns - b.cpu_ns,
	       c.delay_ns - b.delay_ns);
}

int main(int argc, char **argv)
{
	int wait_stdin = 0, do_fork = 0, code = 0, kill_self = 0, sched = 0;
	long threads = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait-stdin"))
			wait_stdin = 1;
		else if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--kill-self"))
			kill_self = 1;
		else if (!strcmp(argv[i], "--blocks"))
			blocks = 1;
		else if (!strcmp(argv[i], "--sched"))
			sched = 1;
		else if (!strcmp(argv[i], "--pingpong") && i + 1 < argc)
			pingpong = atol(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
			code = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: syscalls [--wait-stdin] [--fork] [--threads T] "
				"[--exit CODE] [--kill-self] [--sched] [--blocks] [--pingpong W] "
				"N_GETPPID N_NANOSLEEP "
				"[SLEEP_US]\n");
			return 2;
		}
	}
	if (argc - i < 2)
		return 2;
	n_getppid = atol(argv[i]);
	n_sleep = atol(argv[i + 1]);
	if (argc - i > 2)
		sleep_us = atol(argv[i + 2]);
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (wait_stdin) {
		char c;

		if (read(0, &c, 1) != 1)
			return 3;
	}
	if (do_fork) {
		pid_t child = fork();

		if (child == 0) {
			calls();
			_exit(0);
		}
		printf("child %d\n", child);
		fflush(stdout);
		calls();
		waitpid(child, NULL, 0);
	} else if (threads > 0) {
		pthread_t t[64];

		for (long k = 0; k < threads && k < 64; k++)
			pthread_create(&t[k], NULL, worker, (void *)k);
		for (long k = 0; k < threads && k < 64; k++)
			pthread_join(t[k], NULL);
	} else if (sched) {
		sched_calls();
	} else {
		calls();
	}
	if (pingpong)
		ping_pong();
	if (kill_self)
		kill(getpid(), SIGKILL);
	return code;
}
