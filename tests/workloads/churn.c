// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process churn with an exactly known syscall count: `churn N K [P [prio]]` forks N
 * short-lived children, at most P (default 1) alive at once; each makes K getppid through
 * syscall() and _exits. The parent makes no getppid. With "prio" the calls are
 * sched_get_priority_max(0) instead, a call no shell or compiler makes (for system-wide tests
 * on a busy machine). Prints "pid P" on stdout; exits non-zero if a child failed. Tests that
 * the osrt aggregates of exited threads are flushed, not kept forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int reap(void)
{
	int status;

	if (wait(&status) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long n, k, par = 1, alive = 0, failed = 0, nr = SYS_getppid;

	if (argc < 3) {
		fprintf(stderr, "usage: churn N K [P [prio]]\n");
		return 2;
	}
	n = atol(argv[1]);
	k = atol(argv[2]);
	if (argc > 3)
		par = atol(argv[3]);
	if (argc > 4)
		nr = SYS_sched_get_priority_max;
	if (n < 0 || k < 0 || par < 1) {
		fprintf(stderr, "churn: bad arguments\n");
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		pid_t c;

		if (alive == par) {
			failed += reap() != 0;
			alive--;
		}
		c = fork();
		if (c < 0) {
			perror("churn: fork");
			return 1;
		}
		if (c == 0) {
			for (long j = 0; j < k; j++)
				syscall(nr, 0);
			_exit(0);
		}
		alive++;
	}
	while (alive-- > 0)
		failed += reap() != 0;
	return failed ? 1 : 0;
}
