// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Where every export writes (export.h). */
#include <errno.h>
#include <fcntl.h>
#include "export.h"
#include "sudo_owner.h"

int export__create(const char *out)
{
	/* A new file (--force removed an old one first), never through a symlink, private. */
	int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	sudo_owner__give_fd(fd);
	return fd;
}
