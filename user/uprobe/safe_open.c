// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Opening files a traced process controls: see safe_open.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "safe_open.h"

/* The length of PATH's "/proc/PID/root" prefix when a path follows it, else 0. */
static size_t proc_root_len(const char *path)
{
	size_t n = strlen("/proc/");

	if (strncmp(path, "/proc/", n) || path[n] < '1' || path[n] > '9')
		return 0;
	while (path[n] >= '0' && path[n] <= '9')
		n++;
	if (strncmp(path + n, "/root/", 6))
		return 0;
	return n + strlen("/root");
}

/* An O_PATH descriptor of PATH: resolved inside the process's root when it is under one. */
static int open_path(const char *path)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	size_t rl = proc_root_len(path);
	char root[64];
	int dfd, fd, err;

	if (!rl || rl >= sizeof(root))
		return open(path, O_PATH | O_CLOEXEC);
	memcpy(root, path, rl);
	root[rl] = 0;
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = syscall(SYS_openat2, dfd, path + rl, &how, sizeof(how));
	err = errno;
	if (fd < 0 && err == ENOSYS) /* before 5.6: the path as the kernel resolves it */
		fd = open(path, O_PATH | O_CLOEXEC);
	err = errno;
	close(dfd);
	errno = err;
	return fd;
}

static const char *type_name(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISDIR(m)  ? "a directory"
			     : "not a regular file";
}

int safe_open__regular(const char *path, const char **why)
{
	char self[64];
	struct stat st;
	int pfd, fd, err;

	pfd = open_path(path);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st)) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		if (why)
			*why = type_name(st.st_mode);
		err = -EINVAL;
		goto out;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	err = fd < 0 ? -errno : fd;
out:
	close(pfd);
	return err;
}
