// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced job of inherit_check.sh. `job SEQ [early]` prints its pid, waits for the file
 * $DIR/go, then for each letter of SEQ: m: 10 getppid() calls itself; t: a thread making 100;
 * f: a forked child making 1000 from its first instruction; e: a child that execs `job x`
 * (500 calls); g: a child whose child makes 7; s: sleeps 0.3 s (lets a child's exit settle).
 * With "early", a thread started before the attach forks a child making 1000 on go.
 * `job x` (the exec'd program) makes 500 calls and exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>

static char go[4096];

static void calls(int n)
{
	for (int i = 0; i < n; i++)
		getppid();
}

static void *thread_calls(void *arg)
{
	calls(100);
	return arg;
}

static void child(int n)
{
	pid_t c = fork();

	if (c < 0)
		perror("fork");
	if (!c) {
		if (n < 0)
			for (int i = 0; i < -n; i++)
				getuid();
		else
			calls(n);
		_exit(0);
	}
	waitpid(c, NULL, 0);
}

static void *early(void *arg)
{
	while (access(go, F_OK))
		usleep(10000);
	child(1000);
	return arg;
}

static double ns_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e9 + (t1.tv_nsec - t0->tv_nsec);
}

static void *one_call(void *arg)
{
	getppid();
	return arg;
}

static void act(char a, const char *self)
{
	pthread_t t;
	pid_t c;
	int err;

	switch (a) {
	case 'm':
		calls(10);
		break;
	case 't':
		err = pthread_create(&t, NULL, thread_calls, NULL);
		if (err)
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
		else
			pthread_join(t, NULL);
		break;
	case 'f':
		child(1000);
		break;
	case 'e':
		c = fork();
		if (c < 0)
			perror("fork");
		if (!c) {
			execl(self, "job", "x", (char *)NULL);
			_exit(9);
		}
		waitpid(c, NULL, 0);
		break;
	case 'g':
		c = fork();
		if (!c) {
			child(7);
			_exit(0);
		}
		waitpid(c, NULL, 0);
		break;
	case 'M': {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		calls(200000);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "%.0f ns a call\n",
			((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 200000);
		break;
	}
	case 'T': {
		struct timespec t0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 1000; i++)
			if (!pthread_create(&t, NULL, one_call, NULL))
				pthread_join(t, NULL);
		fprintf(stderr, "%.0f us a thread\n", ns_since(&t0) / 1000 / 1000);
		break;
	}
	case 'F': {
		struct timespec t0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 200; i++)
			child(1);
		fprintf(stderr, "%.0f us a fork\n", ns_since(&t0) / 1000 / 200);
		break;
	}
	case 'u':
		child(-200);
		break;
	case 's':
		usleep(300000);
		break;
	}
}

int main(int argc, char **argv)
{
	pthread_t et;

	if (argc > 1 && !strcmp(argv[1], "x")) {
		calls(500);
		return 0;
	}
	if (argc < 2 || !getenv("DIR"))
		return 2;
	snprintf(go, sizeof(go), "%s/go", getenv("DIR"));
	if (argc > 2)
		pthread_create(&et, NULL, early, NULL);
	printf("%d\n", getpid());
	fflush(stdout);
	while (access(go, F_OK))
		usleep(10000);
	for (const char *p = argv[1]; *p; p++)
		act(*p, argv[0]);
	if (argc > 2)
		pthread_join(et, NULL);
	printf("done\n");
	fflush(stdout);
	pause();
	return 0;
}
