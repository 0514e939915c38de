// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The job and role labels of a process (metrics_ident.h), from its environment as it started
 * (/proc/PID/environ: what torchrun, mpirun or the operator's launcher gave it) and its
 * command line. An operator who names the job otherwise (SLURM_JOB_NAME, a Kubernetes pod's
 * variable) says which variable with --job-label-env.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "metrics_ident.h"

#define ENV_MAX (1 << 16) /* what is read of an environment: launchers set theirs first */

/* /proc/PID/WHAT into BUF (at most MAX - 1 bytes, NUL-terminated): its length, or -1. */
static ssize_t read_proc(__u32 pid, const char *what, char *buf, size_t max)
{
	char path[64];
	ssize_t n = 0, got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/%s", pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)n < max - 1 && (got = read(fd, buf + n, max - 1 - n)) > 0)
		n += got;
	close(fd);
	buf[n] = 0;
	return n;
}

/* NAME's value in the environment ENV (LEN bytes of NAME=VALUE strings), NULL if unset. */
static const char *env_get(const char *env, ssize_t len, const char *name)
{
	size_t nl = strlen(name);

	for (ssize_t i = 0; i < len; i += (ssize_t)strnlen(env + i, len - i) + 1)
		if (!strncmp(env + i, name, nl) && env[i + nl] == '=')
			return env + i + nl + 1;
	return NULL;
}

/* A rank's value: a whole number, 0 to 2^30; -1 otherwise. */
static long rank_of(const char *v)
{
	char *end;
	long r = v ? strtol(v, &end, 10) : -1;

	return v && end != v && !*end && r >= 0 && r < (1l << 30) ? r : -1;
}

static void job_of(__u32 pid, const char *env, ssize_t len, const char *env_name,
		   struct metrics_ident *id)
{
	const char *v = env_name ? env_get(env, len, env_name) : NULL, *addr, *port;
	char cmd[M_JOB_LEN];
	ssize_t n;

	if (!v || !*v)
		v = env_get(env, len, "TORCHELASTIC_RUN_ID");
	if (v && *v) {
		snprintf(id->job, sizeof(id->job), "%s", v);
		return;
	}
	addr = env_get(env, len, "MASTER_ADDR");
	port = env_get(env, len, "MASTER_PORT");
	if (addr && port && *addr && *port) {
		snprintf(id->job, sizeof(id->job), "%s:%s", addr, port);
		return;
	}
	/* The command line, its arguments joined by spaces: "python3 train.py --lr 0.1". */
	n = read_proc(pid, "cmdline", cmd, sizeof(cmd));
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	snprintf(id->job, sizeof(id->job), "%s", n > 0 ? cmd : "");
}

int metrics_ident__read(__u32 pid, const char *env_name, struct metrics_ident *id)
{
	char *env = malloc(ENV_MAX);
	ssize_t len = env ? read_proc(pid, "environ", env, ENV_MAX) : -1;
	long rank;

	memset(id, 0, sizeof(*id));
	if (len < 0) {
		free(env);
		return -ESRCH;
	}
	job_of(pid, env, len, env_name, id);
	rank = rank_of(env_get(env, len, "RANK"));
	if (rank < 0)
		rank = rank_of(env_get(env, len, "LOCAL_RANK"));
	if (rank >= 0)
		snprintf(id->role, sizeof(id->role), "rank %ld", rank);
	else
		snprintf(id->role, sizeof(id->role), "main");
	free(env);
	return id->job[0] ? 0 : -ESRCH;
}
