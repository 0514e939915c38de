// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test workload with an exactly known syscall mix: N getppid and M nanosleep(SLEEP_US),
 * made through syscall() so libc adds nothing. Options:
 *   --wait-stdin   block on a read of stdin before starting (for attaching with -p)
 *   --fork         a child process repeats the same calls (launch mode follows children)
 *   --threads T    T threads each make the calls (pthread names "worker-I")
 *   --exit CODE    exit with CODE
 *   --kill-self    end by SIGKILL (exit status 137 through bpfsight)
 * Prints "pid P" (and "child C" with --fork) on stdout.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static long n_getppid, n_sleep, sleep_us = 1000;

static void calls(void)
{
	struct timespec ts = { .tv_sec = sleep_us / 1000000, .tv_nsec = (sleep_us % 1000000) * 1000 };

	for (long i = 0; i < n_getppid; i++)
		syscall(SYS_getppid);
	for (long i = 0; i < n_sleep; i++)
		syscall(SYS_nanosleep, &ts, NULL);
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	calls();
	return NULL;
}

int main(int argc, char **argv)
{
	int wait_stdin = 0, do_fork = 0, code = 0, kill_self = 0;
	long threads = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait-stdin"))
			wait_stdin = 1;
		else if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--kill-self"))
			kill_self = 1;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
			code = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: syscalls [--wait-stdin] [--fork] [--threads T] "
					"[--exit CODE] [--kill-self] N_GETPPID N_NANOSLEEP [SLEEP_US]\n");
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
	} else {
		calls();
	}
	if (kill_self)
		kill(getpid(), SIGKILL);
	return code;
}
