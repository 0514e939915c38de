// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * uprobe_links__attach on a process that ends while its probes are attached: it says the
 * process ended (-ESRCH), whatever the kernel refused (a zombie's, or a reaped process's,
 * /proc/PID/map_files path is gone: ENOENT), so that a family does not count a probe it could
 * not attach as lost (-a sees many short processes end: the gil family's mutex probes went
 * into attach_failed this way). A live process's probe attaches. Real kernel, real program
 * (the mem family's uprobe), a real child process.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "elf_syms.h"
#include "uprobe_multi.h"
#include "unit.h"
#include "mem.skel.h"

static struct mem_bpf *skel;

/* CHILD's mapping of libc, as the uprobe manager opens files: /proc/PID/map_files/START-END. */
static int libc_of(pid_t child, char *path, size_t len)
{
	char fn[64], line[PATH_MAX + 128];
	FILE *f;
	int found = 0;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", child);
	f = fopen(fn, "r");
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && perms[2] == 'x' &&
		    strstr(line, "/libc.so.6")) {
			snprintf(path, len, "/proc/%d/map_files/%lx-%lx", child, start, end);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : -ENOENT;
}

/* The file offset of libc's getpid in CHILD's mapping at PATH. */
static __u64 getpid_off(const char *path)
{
	struct elf_syms *s = elf_syms__open(path, NULL);
	struct elf_sym sym = {};
	__u64 off = 0;

	if (s && !elf_syms__find(s, "getpid", &sym))
		off = sym.file_off;
	elf_syms__free(s);
	return off;
}

static void attach_to(pid_t child, const char *path, __u64 off, int want)
{
	struct uprobe_multi_opts o = { .pid = child };
	struct uprobe_links l = {};
	int err = uprobe_links__attach(&l, skel->progs.mem_cpu_delete, path, &off, 1, &o);

	ASSERT_EQ(err, want, "uprobe_links__attach");
	uprobe_links__detach(&l);
}

static void test_a_process_that_ended_is_said_gone(void)
{
	char path[PATH_MAX];
	pid_t child = fork();
	__u64 off;

	if (child == 0) {
		pause();
		_exit(0);
	}
	if (!ASSERT_TRUE(child > 0, "fork"))
		return;
	usleep(100000); /* the child has execed nothing: its libc is the parent's */
	if (!ASSERT_EQ(libc_of(child, path, sizeof(path)), 0, "the child maps libc") ||
	    !ASSERT_TRUE((off = getpid_off(path)) != 0, "getpid in libc"))
		goto out;
	ASSERT_EQ(uprobe_multi__process_gone(child), 0, "alive");
	attach_to(child, path, off, 0);
	kill(child, SIGKILL);
	usleep(100000);
	ASSERT_EQ(uprobe_multi__process_gone(child), 1, "a zombie is gone");
	attach_to(child, path, off, -ESRCH);
out:
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ASSERT_EQ(uprobe_multi__process_gone(child), 1, "reaped");
	if (off)
		attach_to(child, path, off, -ESRCH); /* its map_files path went with it */
	ASSERT_EQ(uprobe_multi__process_gone(getpid()), 0, "this process is not");
}

int main(void)
{
	if (geteuid()) {
		printf("skip - test_uprobe_links: needs root (BPF)\n");
		return 0;
	}
	skel = mem_bpf__open();
	if (!skel ||
	    (uprobe_multi__supported() && uprobe_multi__prepare(skel->progs.mem_cpu_delete)) ||
	    mem_bpf__load(skel)) {
		printf("not ok - test_uprobe_links: the mem object does not load\n");
		return 1;
	}
	RUN_TEST(test_a_process_that_ended_is_said_gone);
	mem_bpf__destroy(skel);
	return UNIT_EXIT();
}
