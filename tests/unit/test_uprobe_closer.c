// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * uprobe_closer: every descriptor handed over is closed once drain returns, by its threads
 * (the recording's thread is not held), in batches larger than its threads; a NULL closer, or
 * one being freed, closes at once. Pipes stand for links here (a link's close is the same
 * close(2), only slower: bench/RESULTS.md, "Probes per process").
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "uprobe_closer.h"
#include "unit.h"

#define NFDS 200

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

static void test_every_fd_closed_by_drain(void)
{
	struct uprobe_closer *c = uprobe_closer__new();
	int fds[NFDS], open_after = 0;

	if (!ASSERT_TRUE(c, "a closer"))
		return;
	for (int i = 0; i < NFDS; i += 2) {
		if (!ASSERT_EQ(pipe(fds + i), 0, "a pipe"))
			return;
	}
	for (int i = 0; i < NFDS; i++)
		uprobe_closer__close(c, fds[i]);
	uprobe_closer__drain(c);
	for (int i = 0; i < NFDS; i++)
		open_after += is_open(fds[i]);
	ASSERT_EQ(open_after, 0, "descriptors still open after drain");
	/* Again after a drain: the threads wait for more. */
	if (ASSERT_EQ(pipe(fds), 0, "a pipe")) {
		uprobe_closer__close(c, fds[0]);
		uprobe_closer__close(c, fds[1]);
		uprobe_closer__drain(c);
		ASSERT_TRUE(!is_open(fds[0]) && !is_open(fds[1]), "closed after a second drain");
	}
	uprobe_closer__free(c);
}

static void test_without_a_closer_at_once(void)
{
	int fds[2];

	if (!ASSERT_EQ(pipe(fds), 0, "a pipe"))
		return;
	uprobe_closer__close(NULL, fds[0]);
	ASSERT_TRUE(!is_open(fds[0]), "closed at once");
	uprobe_closer__close(NULL, -1); /* nothing */
	close(fds[1]);
	uprobe_closer__drain(NULL);
	uprobe_closer__free(NULL);
}

static void test_free_closes_what_waits(void)
{
	struct uprobe_closer *c = uprobe_closer__new();
	int fds[2];

	if (!ASSERT_TRUE(c, "a closer") || !ASSERT_EQ(pipe(fds), 0, "a pipe"))
		return;
	uprobe_closer__close(c, fds[0]);
	uprobe_closer__close(c, fds[1]);
	uprobe_closer__free(c);
	ASSERT_TRUE(!is_open(fds[0]) && !is_open(fds[1]), "closed by free");
}

int main(void)
{
	RUN_TEST(test_every_fd_closed_by_drain);
	RUN_TEST(test_without_a_closer_at_once);
	RUN_TEST(test_free_closes_what_waits);
	return UNIT_EXIT();
}
