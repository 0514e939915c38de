// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `syscall_gate NR ARG0 CMD...`: runs CMD with its first system call NR whose first
 * argument is ARG0 held (a seccomp user notification) until a line comes on stdin; prints
 * "held" when it is. Every later such call goes on at once. Exits with CMD's status. For
 * tests that must act at a known point of bpfsight's run (tests/e2e/test_stacks_dump.py: a
 * process that exits during a dump, after bpfsight found it and before its first look).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int listen_to(unsigned nr, unsigned arg0)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arg0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		       &prog);
}

int main(int argc, char **argv)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	int to_parent[2], go[2], fd = -1, status, held = 0, pidfd;
	char line[64];
	pid_t child;

	if (argc < 4 || pipe(to_parent) || pipe(go))
		return 2;
	child = fork();
	if (child == 0) {
		fd = listen_to(strtoul(argv[1], NULL, 0), strtoul(argv[2], NULL, 0));
		if (write(to_parent[1], &fd, sizeof(fd)) != sizeof(fd) ||
		    read(go[0], line, 1) != 1 || fd < 0)
			_exit(2);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	if (read(to_parent[0], &fd, sizeof(fd)) != sizeof(fd) || fd < 0)
		return 2;
	/* The listener is the child's: take a copy before it execs (it is close-on-exec). */
	pidfd = syscall(SYS_pidfd_open, child, 0);
	fd = pidfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (fd < 0 || write(go[1], "g", 1) != 1)
		return 2;
	for (;;) {
		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req))
			break; /* the child is gone */
		if (!held++) {
			printf("held\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin))
				line[0] = 0; /* no more cues: let it go all the same */
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) && errno != ENOENT)
			break;
	}
	if (waitpid(child, &status, 0) != child)
		return 2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
