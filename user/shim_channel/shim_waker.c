// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Waking a sleeping cupti-shim (shim_waker.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim_records.h"
#include "shim_waker.h"

/* The page's range in PID's maps: "/memfd:bpfsight-shim-wake (deleted)". 0 or -errno. */
static int find_page(pid_t pid, unsigned long long *lo, unsigned long long *hi)
{
	char path[64], line[512];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/memfd:" BS_SHIM_WAKE_NAME) &&
			sscanf(line, "%llx-%llx", lo, hi) == 2 && *hi - *lo >= 4096;
	fclose(f);
	return found ? 0 : -ENOENT;
}

int shim_waker__wake(pid_t pid)
{
	unsigned long long lo, hi;
	char path[96];
	unsigned *word;
	int fd, err = find_page(pid, &lo, &hi);

	if (err)
		return err == -ENOENT ? 0 : err;
	/* The page itself (CAP_CHECKPOINT_RESTORE, which the recorder keeps), shared with it. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid, lo, hi);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (word == MAP_FAILED)
		return -errno;
	__atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	munmap(word, 4096);
	return 1;
}
