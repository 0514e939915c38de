// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpf_links destroyed with the kernel's wait in a detached process (link_reaper.h). */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "env.h"
#include "link_reaper.h"
#include "msg.h"

/* Below this many links, waiting here costs less than a second (~0.1 s each). */
#define REAPER_MIN 8

/*
 * The detached process: closes every fd but the links' own (perf events, bpf links) and
 * GATE: the trace file, pipes and the terminal must not outlive the recorder, or whoever
 * waits for their end would wait for the teardown too. Once the recorder has closed its
 * copies (GATE's other end closed), exits, which drops the last references to the links.
 */
static void reaper_child(int gate, int done, struct bpf_link **links, unsigned int n)
{
	char c;

	char path[64], target[64];
	struct dirent *d;
	DIR *dir;

	prctl(PR_SET_NAME, "bpfsight-detach");
	setsid();
	dir = opendir("/proc/self/fd");
	while (dir && (d = readdir(dir))) {
		int fd = atoi(d->d_name);
		ssize_t len;

		if (d->d_name[0] == '.' || fd == dirfd(dir) || fd == gate || fd == done)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = 0;
		if (strcmp(target, "anon_inode:[perf_event]") &&
		    strcmp(target, "anon_inode:bpf_link"))
			close(fd);
	}
	if (dir)
		closedir(dir);
	while (read(gate, &c, 1) < 0)
		; /* EINTR */
	/* In the caller's order (entry probes before return probes), not the fds' at exit. */
	for (unsigned int i = 0; i < n; i++)
		close(bpf_link__fd(links[i]));
	if (done >= 0) {
		/* The links first (each close waits for its teardown), DONE's end last. */
		if (done > 0)
			close_range(0, done - 1, 0);
		close_range(done + 1, ~0u, 0);
	}
	_exit(0);
}

/* Whether process PID still holds a perf event: where a per-site uprobe lives. */
static bool holds_perf_event(const char *pid)
{
	char path[600], target[64];
	struct dirent *d;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	dir = opendir(path);
	while (dir && !found && (d = readdir(dir))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, d->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = 0;
		found = !strcmp(target, "anon_inode:[perf_event]");
	}
	if (dir)
		closedir(dir);
	return found;
}

/* The pids the wait names, at most (the count is whole). */
#define WAIT_NAMED 4

/*
 * The bpfsight-detach processes still dropping perf events, the first WAIT_NAMED of them into
 * PIDS (may be NULL). One that holds only bpf links (tracepoints, uprobe_multi) takes nothing
 * an attach needs, nor does one that has exited.
 */
static int detachers_running(int *pids)
{
	char path[288], comm[32];
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/proc");

	while (dir && (d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "bpfsight-detach\n") &&
		    holds_perf_event(d->d_name)) {
			if (pids && n < WAIT_NAMED)
				pids[n] = atoi(d->d_name);
			n++;
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return n;
}

int link_reaper__wait_others(unsigned int limit_ms)
{
	struct timespec tick = { 0, 50 * 1000000 };
	int pids[WAIT_NAMED], n = detachers_running(pids);
	char named[WAIT_NAMED * 12 + 8] = "";
	size_t len = 0;

	if (!n)
		return 0;
	/* Which: the user (or a test) tells an earlier recording's teardown from its own. */
	for (int i = 0; i < n && i < WAIT_NAMED; i++)
		len += (size_t)snprintf(named + len, sizeof(named) - len, "%s%d", i ? " " : "",
					pids[i]);
	if (n > WAIT_NAMED)
		snprintf(named + len, sizeof(named) - len, " ...");
	pr_info("waiting for %d earlier recording(s) to free their uprobes (bpfsight-detach pid "
		"%s; this kernel has no uprobe_multi; at most %u s)\n",
		n, named, limit_ms / 1000);
	for (unsigned int waited = 0; n && waited < limit_ms; waited += 50) {
		nanosleep(&tick, NULL);
		n = detachers_running(NULL);
	}
	return n;
}

/*
 * The write end of a new detached process's gate (it holds this process's links), or -1;
 * *DONE (when asked for) the read end of a pipe that ends once the process has dropped them.
 */
static int reaper_start(int *done, struct bpf_link **links, unsigned int n)
{
	int gate[2], fin[2] = { -1, -1 }, st;
	pid_t pid;

	if (env__trusted("BPFSIGHT_DETACH_INLINE") || pipe2(gate, O_CLOEXEC))
		return -1;
	if (done && pipe2(fin, O_CLOEXEC)) {
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	fflush(NULL);
	/* Two forks: the grandchild is nobody's child to reap (init's), so a long-lived
	 * bpfsight (monitor) gathers no zombies. */
	pid = fork();
	if (pid == 0) {
		close(gate[1]);
		if (fin[0] >= 0)
			close(fin[0]);
		if (fork() == 0)
			reaper_child(gate[0], fin[1], links, n);
		_exit(0);
	}
	close(gate[0]);
	if (fin[1] >= 0)
		close(fin[1]);
	if (pid < 0) {
		close(gate[1]);
		if (fin[0] >= 0)
			close(fin[0]);
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0)
		;
	if (done)
		*done = fin[0];
	return gate[1];
}

/* A holder's gate (link_reaper__hold_all): while it is open, links close at once. */
static int held = -1, held_done = -1;

void link_reaper__destroy(struct bpf_link **links, unsigned int n)
{
	int gate = -1;

	if (n >= REAPER_MIN && held < 0)
		gate = reaper_start(NULL, links, n);
	for (unsigned int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	if (gate >= 0)
		close(gate); /* the detached process may go: ours are closed */
}

int link_reaper__hold_all(void)
{
	if (held < 0)
		held = reaper_start(&held_done, NULL, 0);
	return held;
}

void link_reaper__let_go(unsigned int wait_ms)
{
	struct pollfd p = { .fd = held_done, .events = POLLIN };

	if (held >= 0)
		close(held);
	held = -1;
	if (held_done < 0)
		return;
	/* Usually the probes are gone in a moment; under a storm, this long at most. */
	while (poll(&p, 1, (int)wait_ms) < 0 && errno == EINTR)
		;
	close(held_done);
	held_done = -1;
}
