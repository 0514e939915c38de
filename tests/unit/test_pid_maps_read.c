// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pid_maps_read: a read of /proc/PID/maps that the process's exit cut short is told apart
 * (the kernel hands the file out a page at a time), and only adds to the mappings it had.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "pid_maps_read.h"
#include "unit.h"

#define MAPPINGS 300 /* a line each: ~25 KiB of maps, several pages */

/* A child with MAPPINGS executable mappings of this program's file; it writes a byte to
 * READY once they are made, then waits to be killed. */
static pid_t child_with_mappings(int ready)
{
	pid_t pid = fork();
	long page = sysconf(_SC_PAGESIZE);
	char *base;
	int fd;

	if (pid)
		return pid;
	fd = open("/proc/self/exe", O_RDONLY);
	base = mmap(NULL, 2 * MAPPINGS * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || base == MAP_FAILED)
		_exit(1);
	/* Every other page: neighbours would merge into one mapping. */
	for (int i = 0; i < MAPPINGS; i++)
		if (mmap(base + 2 * i * page, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			 fd, 0) == MAP_FAILED)
			_exit(1);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static int lines_in(const char *b, ssize_t n)
{
	int k = 0;

	for (ssize_t i = 0; i < n; i++)
		k += b[i] == '\n';
	return k;
}

static void test_a_read_the_exit_cut_short_is_told(void)
{
	static char buf[1 << 20];
	int p[2], lines = 0, first;
	siginfo_t si;
	ssize_t got;
	char c, fn[64];
	pid_t child;
	int fd;

	if (pipe(p)) {
		unit_fail("pipe");
		return;
	}
	child = child_with_mappings(p[1]);
	if (!ASSERT_TRUE(child > 0, "fork") || !ASSERT_EQ(read(p[0], &c, 1), 1, "child ready"))
		goto out;
	ASSERT_TRUE(pid_maps_read__alive(child), "the child has its address space");
	snprintf(fn, sizeof(fn), "/proc/%d/maps", child);
	fd = open(fn, O_RDONLY);
	if (!ASSERT_TRUE(fd >= 0, "open maps"))
		goto out;
	/* A page, as fgets' buffer reads it; then the child dies before the rest is read. */
	got = read(fd, buf, 4096);
	first = lines_in(buf, got);
	kill(child, SIGKILL);
	waitid(P_PID, child, &si, WEXITED | WNOWAIT);
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		lines += lines_in(buf, got);
	close(fd);
	ASSERT_TRUE(first > 0 && first < MAPPINGS, "the first page holds some of the mappings");
	ASSERT_EQ(lines, 0, "the pages after the exit read empty");
	ASSERT_TRUE(!pid_maps_read__alive(child), "told: the zombie has no address space");
	ASSERT_TRUE(pid_maps_read__alive(getpid()), "a live process has one");
out:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	close(p[0]);
	close(p[1]);
}

static void test_a_cut_read_only_adds(void)
{
	struct pid_mapping had[3] = { { 0x1000, 0x2000, 0, 1, 10, NULL },
				      { 0x5000, 0x9000, 0, 1, 11, NULL },
				      { 0x20000, 0x30000, 0, 1, 12, NULL } };
	/* What the cut read saw: the first, one new (dlopen'd at the end), one that overlaps. */
	const struct pid_mapping cut[3] = { { 0x1000, 0x2000, 0, 1, 10, NULL },
					    { 0x40000, 0x41000, 0, 1, 13, NULL },
					    { 0x8000, 0xa000, 0, 1, 14, NULL } };
	struct pid_mapping *v = malloc(sizeof(had));
	__u32 n = 3;

	if (!v) {
		unit_fail("malloc");
		return;
	}
	memcpy(v, had, sizeof(had));
	ASSERT_EQ(pid_maps_read__add(&v, &n, cut, 3), 0, "added");
	ASSERT_EQ(n, 4, "the three it had and the new one");
	ASSERT_EQ(v[1].ino, 11, "a mapping it had stays, whatever the read shows there");
	ASSERT_EQ(v[2].ino, 12, "one the read did not reach stays");
	ASSERT_EQ(v[3].ino, 13, "the new one joins");
	free(v);
}

int main(void)
{
	RUN_TEST(test_a_read_the_exit_cut_short_is_told);
	RUN_TEST(test_a_cut_read_only_adds);
	return UNIT_EXIT();
}
