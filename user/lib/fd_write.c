// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Writing a whole buffer to a file descriptor (fd_write.h). */
#include <errno.h>
#include <unistd.h>
#include "fd_write.h"

int fd__write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}
