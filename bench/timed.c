// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * timed: run a command and print how long it took, as JSON, for benchmark loads that do not
 * time themselves (bench/run_bench.py runs `find /usr` under it). Timing from inside the
 * traced process tree leaves out the tracer's own start-up and shutdown.
 *
 *   timed [-q] [--] CMD [ARGS...]
 *
 * -q sends CMD's stdout to /dev/null. Prints {"seconds": S, "status": N} and exits with
 * CMD's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int quiet = 0, status, c;
	double start;
	pid_t pid;

	while ((c = getopt(argc, argv, "+qh")) != -1) {
		switch (c) {
		case 'q':
			quiet = 1;
			break;
		case 'h':
			printf("Usage: timed [-q] [--] CMD [ARGS...]\n\n"
			       "Runs CMD and prints {\"seconds\": S, \"status\": N}\n"
			       "(-q: CMD's stdout to /dev/null).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "Usage: timed [-q] [--] CMD [ARGS...]\n");
		return 2;
	}
	fflush(stdout);
	start = now_s();
	pid = fork();
	if (pid < 0) {
		perror("timed: fork");
		return 1;
	}
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);

			if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
				_exit(127);
			close(fd);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "timed: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("timed: waitpid");
			return 1;
		}
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("{\"seconds\": %.6f, \"status\": %d}\n", now_s() - start, status);
	return fflush(stdout) ? 1 : status;
}
