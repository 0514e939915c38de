// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "launch.h"
#include "msg.h"

/* USER's groups from /etc/group (not NSS: the binary is static), and GID. */
static int set_groups(const char *user, gid_t gid)
{
	gid_t list[NGROUPS_MAX];
	struct group *g;
	size_t n = 0;
	FILE *f = fopen("/etc/group", "re");

	list[n++] = gid;
	while (f && *user && (g = fgetgrent(f)))
		for (char **m = g->gr_mem; *m && n < NGROUPS_MAX; m++)
			if (!strcmp(*m, user) && g->gr_gid != gid) {
				list[n++] = g->gr_gid;
				break;
			}
	if (f)
		fclose(f);
	return setgroups(n, list);
}

int launch__start(struct launch *l, char **cmd, const char *user, uid_t uid, gid_t gid)
{
	int gate[2];
	char go;

	memset(l, 0, sizeof(*l));
	l->gate_fd = -1;
	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	l->pid = fork();
	if (l->pid < 0) {
		int err = -errno;

		close(gate[0]);
		close(gate[1]);
		return err;
	}
	if (l->pid == 0) {
		close(gate[1]);
		if (user && (set_groups(user, gid) || setgid(gid) || setuid(uid))) {
			pr_err("cannot run '%s' as uid %u: %s\n", cmd[0], (unsigned)uid,
			       strerror(errno));
			_exit(126);
		}
		/* EOF without a byte means the recorder gave up: do not run CMD untraced. */
		if (read(gate[0], &go, 1) != 1)
			_exit(127);
		close(gate[0]);
		execvp(cmd[0], cmd);
		pr_err("cannot run '%s': %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(gate[0]);
	l->gate_fd = gate[1];
	return 0;
}

void launch__go(struct launch *l)
{
	char go = 1;

	if (l->gate_fd < 0)
		return;
	if (write(l->gate_fd, &go, 1) != 1)
		pr_err("cannot release CMD (pid %d): %s\n", (int)l->pid, strerror(errno));
	close(l->gate_fd);
	l->gate_fd = -1;
}

void launch__abort(struct launch *l)
{
	if (l->gate_fd >= 0) {
		close(l->gate_fd);
		l->gate_fd = -1;
	}
	if (l->pid > 0)
		launch__reap(l, 1);
}

int launch__reap(struct launch *l, int block)
{
	pid_t r;

	if (l->reaped)
		return 1;
	do
		r = waitpid(l->pid, &l->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == l->pid) {
		l->reaped = 1;
		return 1;
	}
	return 0;
}

int launch__exit_status(const struct launch *l)
{
	if (WIFEXITED(l->status))
		return WEXITSTATUS(l->status);
	if (WIFSIGNALED(l->status))
		return 128 + WTERMSIG(l->status);
	return 1;
}
