// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ship_lock.h: flock on JOB.CONTENT_ID.lock in the spool. The file is removed while still
 * locked, so a process that opened it before that and locks it after finds its descriptor no
 * longer the path's file, and opens again: two holders of one path are never both locked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "ship_lock.h"

int ship_lock__take(const struct ship_spool *sp, const char *job, const char *id, int *holder)
{
	char path[4200], buf[32];
	struct stat a, b;
	int fd, len;

	*holder = 0;
	ship_spool__path(sp, job, id, ".lock", path, sizeof(path));
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
			ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

			buf[n > 0 ? n : 0] = 0;
			*holder = atoi(buf);
			close(fd);
			return err;
		}
		/* removed by the holder we waited behind: its file is not the path's any more */
		if (!fstat(fd, &a) && !stat(path, &b) && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			break;
		close(fd);
	}
	len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)len, 0) != len) {
		int err = -errno ?: -EIO;

		ship_lock__drop(sp, job, id, fd);
		return err;
	}
	return fd;
}

void ship_lock__drop(const struct ship_spool *sp, const char *job, const char *id, int fd)
{
	char path[4200];

	if (fd <= 0)
		return;
	ship_spool__path(sp, job, id, ".lock", path, sizeof(path));
	unlink(path);
	close(fd);
}
