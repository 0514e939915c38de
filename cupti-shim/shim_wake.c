// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The poller's sleep between recordings (shim_records.h, BS_SHIM_WAKE_NAME): a futex word in
 * a shared one-page memfd, which a tracer that attaches maps through /proc/PID/map_files and
 * wakes. Between recordings the job's threads see no wakeup from the shim at all, where a
 * 50 ms poll woke it 20 times a second for as long as the job lived.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

static _Atomic uint32_t *word; /* NULL: no memfd (the poller keeps its timer) */

void shim_wake__init(void)
{
	int fd;
	void *p;

	if (word)
		return;
	fd = memfd_create(BS_SHIM_WAKE_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (ftruncate(fd, 4096)) {
		close(fd);
		return;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd); /* the mapping keeps the memfd */
	if (p != MAP_FAILED)
		word = p;
}

bool shim_wake__can_sleep(void)
{
	return word != NULL;
}

uint32_t shim_wake__seen(void)
{
	return word ? atomic_load(word) : 0;
}

void shim_wake__sleep(uint32_t seen)
{
	/* Returns at once when a wake came after SEEN was read: nothing is missed. */
	if (word)
		syscall(SYS_futex, word, FUTEX_WAIT, seen, NULL, NULL, 0);
}

/*
 * An injection entry point acted on the semaphores (shim_core__poll_now) while the poller may
 * sleep: it looks again, and keeps the timer if something came on.
 */
void shim_wake__poke(void)
{
	if (!word)
		return;
	atomic_fetch_add(word, 1);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
