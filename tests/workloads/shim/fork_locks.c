// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A fork while another thread holds one of the cupti-shim's locks: the child must inherit none
 * held (the shim's prepare handler waits for each, shim_fork.c), or its first use of that lock
 * waits forever (a DataLoader worker that never exits).
 *
 *   fork_locks SHIM_TEST_LIB [MS]
 *
 * Loads the test variant of the shim and starts it as libcuda would (InitializeInjection; it
 * fails without a GPU and carries on). For each of the shim's locks (bpfsight_shim_test_locks'
 * list): a thread of the shim's takes it and holds it MS ms (default 300), and this thread
 * forks at once; the child tries every lock and exits with the number held. One JSON line per
 * lock: {"lock": NAME, "held_in_child": "NAMES", "status": N, "fork_ms": T}. Exit 0 when the
 * workload ran (the test judges the lines).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int (*hold)(const char *, unsigned int), (*locks)(char *, char *, size_t), (*init)(void);
	char all[1024], held[1024], *name, *save;
	unsigned int ms = argc > 2 ? (unsigned int)atoi(argv[2]) : 300;
	void *shim;

	if (argc < 2) {
		fprintf(stderr, "usage: fork_locks SHIM_TEST_LIB [MS]\n");
		return 2;
	}
	shim = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!shim) {
		fprintf(stderr, "fork_locks: %s\n", dlerror());
		return 1;
	}
	*(void **)&hold = dlsym(shim, "bpfsight_shim_test_hold_lock");
	*(void **)&locks = dlsym(shim, "bpfsight_shim_test_locks");
	*(void **)&init = dlsym(shim, "InitializeInjection");
	if (!hold || !locks || !init) {
		fprintf(stderr, "fork_locks: not the shim's test variant\n");
		return 1;
	}
	init();
	locks(all, held, sizeof(all));
	for (name = strtok_r(all, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		double t0;
		int status = 0;
		pid_t pid;

		if (hold(name, ms)) {
			fprintf(stderr, "fork_locks: no lock %s\n", name);
			return 1;
		}
		fflush(stdout);
		t0 = now_ms();
		pid = fork();
		if (pid == 0) {
			char mine[sizeof(all)];
			int n = locks(mine, held, sizeof(held));

			printf("{\"lock\": \"%s\", \"held_in_child\": \"%s\", ", name, held);
			fflush(stdout);
			_exit(n);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid) {
			perror("fork_locks: fork");
			return 1;
		}
		printf("\"status\": %d, \"fork_ms\": %.1f}\n",
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
		       now_ms() - t0);
		fflush(stdout);
	}
	return 0;
}
