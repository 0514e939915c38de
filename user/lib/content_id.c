// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A file's content id: content_id.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/types.h>
#include "content_id.h"

#define FNV_PRIME 0x100000001b3ULL

int content_id__file(const char *path, char *buf)
{
	__u64 a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL, size = 0;
	static unsigned char chunk[1 << 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			a = (a ^ chunk[i]) * FNV_PRIME;
			b = (b ^ (unsigned char)~chunk[i]) * FNV_PRIME;
		}
		size += (__u64)n;
	}
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	snprintf(buf, CONTENT_ID_LEN, "%016llx%016llx-%llx", (unsigned long long)a,
		 (unsigned long long)b, (unsigned long long)size);
	return 0;
}
