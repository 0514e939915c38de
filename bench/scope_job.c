// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The job of the probe-scope benchmark (bench/bench_scope.py): what probes placed in each
 * traced process alone cost a job that makes processes and threads, against probes on the
 * files. It maps the real libcudart (cuda's probes) and calls it; without a GPU each call
 * fails fast, after entering the library where the probes sit.
 *
 *   scope_job forks N    N children, one at a time, each one cudaStreamQuery, then _exit
 *   scope_job execs N    N children, one at a time, each exec'ing PROG (/bin/true by default)
 *   scope_job threads N  N threads at once, each one cudaStreamQuery, joined
 *   scope_job wait N     prints {"pid": P} and waits for its stdin to close (a job to attach to)
 *
 * Prints one line: {"ns": WALL} for the N, measured here (the job's own clock), after one
 * call of its own (the library loaded and probed before the clock starts). Exits non-zero when
 * a child or a thread failed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cuda_runtime_api.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int reap(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void *one_call(void *arg)
{
	(void)cudaStreamQuery(0);
	return arg;
}

int main(int argc, char **argv)
{
	const char *prog = getenv("SCOPE_EXEC") ? getenv("SCOPE_EXEC") : "/bin/true";
	long n = argc > 2 ? atol(argv[2]) : 0, failed = 0;
	long long t0;

	if (argc < 3 || n <= 0) {
		fprintf(stderr, "usage: scope_job forks|execs|threads N\n");
		return 2;
	}
	(void)cudaStreamQuery(0);
	if (!strcmp(argv[1], "wait")) {
		char buf[64];

		printf("{\"pid\": %d}\n", getpid());
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
		return 0;
	}
	t0 = now_ns();
	if (!strcmp(argv[1], "forks") || !strcmp(argv[1], "execs")) {
		int exec = argv[1][0] == 'e';

		for (long i = 0; i < n; i++) {
			pid_t pid = fork();

			if (!pid) {
				if (exec)
					execl(prog, prog, (char *)NULL);
				else
					(void)cudaStreamQuery(0);
				_exit(exec ? 127 : 0);
			}
			failed += reap(pid) != 0;
		}
	} else if (!strcmp(argv[1], "threads")) {
		pthread_t *t = calloc((size_t)n, sizeof(*t));
		long made = 0;

		while (t && made < n && !pthread_create(&t[made], NULL, one_call, NULL))
			made++;
		for (long i = 0; i < made; i++)
			pthread_join(t[i], NULL);
		failed += n - made;
		free(t);
	} else {
		fprintf(stderr, "scope_job: unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("{\"ns\": %lld, \"failed\": %ld}\n", now_ns() - t0, failed);
	return failed ? 1 : 0;
}
