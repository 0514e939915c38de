// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A thread's on-CPU time, for top's CPU%: the scheduler's own count in ns (the first field of
 * /proc/PID/task/TID/schedstat, CONFIG_SCHED_INFO), exact where stat's utime and stime are
 * clock ticks. One small read per thread per refresh, as top and htop do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "top_priv.h"

int top_cpu__read(__u32 pid, __u32 tid, __u64 *ns, __u64 *delay)
{
	char path[64], buf[96], *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	*ns = strtoull(buf, &end, 10);
	if (delay) /* the second field: its time ready to run without a CPU */
		*delay = strtoull(end, NULL, 10);
	return end == buf ? -EINVAL : 0;
}
