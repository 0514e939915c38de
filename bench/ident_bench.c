// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What monitor pays for a process's job_name and role labels (user/monitor/metrics_ident.h):
 * one read of its environment and command line from /proc, made on the monitor's thread as it
 * sees the process start or exec, never in the process.
 *
 *   ident_bench [PID] [READS]
 *
 * Reads PID's identity (default: its own) READS times (default 20000); prints one JSON line:
 * the median ns of one read, and of one fork+exec+wait of /bin/true (the floor: what every
 * process start costs the machine already, which the read comes with).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "metrics_ident.h"
#include "mono_clock.h"

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static __u64 median(__u64 *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	__u32 pid = argc > 1 ? (__u32)atoi(argv[1]) : (__u32)getpid();
	int reads = argc > 2 ? atoi(argv[2]) : 20000, execs = 200;
	__u64 *ns = calloc(reads > execs ? reads : execs, sizeof(*ns)), t;
	struct metrics_ident id;
	__u64 read_ns;

	if (!ns || reads < 1)
		return 1;
	for (int i = 0; i < reads; i++) {
		t = mono_now_ns();
		if (metrics_ident__read(pid, NULL, &id))
			return 1;
		ns[i] = mono_now_ns() - t;
	}
	read_ns = median(ns, reads);
	for (int i = 0; i < execs; i++) {
		pid_t c;

		t = mono_now_ns();
		c = fork();
		if (!c) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		waitpid(c, NULL, 0);
		ns[i] = mono_now_ns() - t;
	}
	printf("{\"read_ns\": %llu, \"exec_true_ns\": %llu, \"job_name\": \"%s\", \"role\": \"%s\"}\n",
	       (unsigned long long)read_ns, (unsigned long long)median(ns, execs), id.job, id.role);
	free(ns);
	return 0;
}
