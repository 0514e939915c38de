// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Does a uprobe opened for one process with perf's inherit cover its children from their first
 * instruction, with a BPF program? (issue 82 item 3; run by inherit_check.sh.)
 * `inherit_check MODE PID FILE OFF [ret]` attaches count.bpf.o to FILE+OFF for PID, creates
 * $DIR/attached, waits for $DIR/stop, prints "tgid T: N" per process, and removes what it made:
 *   pmu      the "uprobe" PMU event (config1 = path), inherit=1, the program on it;
 *   tracefs  a tracefs uprobe event (uprobe_events), its perf event inherit=1, the program on it;
 *   anchor   a tracefs event; the program on a perf event without inherit (the anchor), and a
 *            second perf event with inherit=1 and no program, which only filters;
 *   threads  anchor, with an inherited filter event on each of PID's threads;
 *   multi    a uprobe_multi link with PID (the recorder's way today), for the price of a call.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#define UPROBE_EVENTS		 "/sys/kernel/tracing/uprobe_events"
#define UPROBE_MULTI_ATTACH_TYPE 48 /* BPF_TRACE_UPROBE_MULTI, uapi since 6.6 */

static char group[64];

static int tracefs_write(const char *line)
{
	int fd = open(UPROBE_EVENTS, O_WRONLY | O_APPEND);
	ssize_t n = fd < 0 ? -1 : write(fd, line, strlen(line));
	int err = n == (ssize_t)strlen(line) ? 0 : -errno;

	if (fd >= 0)
		close(fd);
	return err;
}

static int read_int(const char *path, long long *v)
{
	FILE *f = fopen(path, "re");
	int ok = f && fscanf(f, "%lld", v) == 1;

	if (f)
		fclose(f);
	return ok ? 0 : -1;
}

static int perf_open(struct perf_event_attr *a, int pid, int inherit)
{
	int fd;

	a->inherit = inherit;
	fd = (int)syscall(SYS_perf_event_open, a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "perf_event_open(pid %d, inherit %d): %s\n", pid, inherit,
			strerror(errno));
	return fd;
}

static int attach(int prog, int fd)
{
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		perror("PERF_EVENT_IOC_SET_BPF");
		return -1;
	}
	return 0;
}

/* An inherited event without a program on each of PID's threads but PID itself. */
static int filter_threads(struct perf_event_attr *a, int pid)
{
	char dir[64];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);

		if (tid > 0 && tid != pid && perf_open(a, tid, 1) < 0)
			return -1;
	}
	closedir(d);
	return 0;
}

/* A uprobe_multi link with PID, by raw BPF_LINK_CREATE (this libbpf may predate it). */
static int multi_attach(int prog, int pid, const char *file, __u64 off, int ret)
{
	union {
		struct {
			__u32 prog_fd, target_fd, attach_type, flags;
			__u64 path, offsets, ref_ctr_offsets, cookies;
			__u32 cnt, multi_flags, pid, pad;
		} lc;
		char raw[sizeof(union bpf_attr)];
	} attr;

	memset(&attr, 0, sizeof(attr));
	attr.lc.prog_fd = (__u32)prog;
	attr.lc.attach_type = UPROBE_MULTI_ATTACH_TYPE;
	attr.lc.path = (__u64)(unsigned long)file;
	attr.lc.offsets = (__u64)(unsigned long)&off;
	attr.lc.cnt = 1;
	attr.lc.multi_flags = ret ? 1 : 0; /* BPF_F_UPROBE_MULTI_RETURN */
	attr.lc.pid = (__u32)pid;
	return (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
}

int main(int argc, char **argv)
{
	struct perf_event_attr a = { .size = sizeof(a) };
	const char *mode, *file, *dir = getenv("DIR");
	struct bpf_object *obj;
	char path[256], line[512];
	unsigned int key, *prev = NULL;
	unsigned long long n;
	long long v;
	int pid, prog, fd, map, ret;

	if (argc < 5 || !dir)
		return 2;
	mode = argv[1];
	pid = atoi(argv[2]);
	file = argv[3];
	ret = argc > 5;
	obj = bpf_object__open_file("count.bpf.o", NULL);
	if (obj && !strcmp(mode, "multi"))
		bpf_program__set_expected_attach_type(
			bpf_object__find_program_by_name(obj, "count"), UPROBE_MULTI_ATTACH_TYPE);
	if (!obj || bpf_object__load(obj))
		return 1;
	prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "count"));
	if (!strcmp(mode, "multi")) {
		if (multi_attach(prog, pid, file, strtoull(argv[4], NULL, 0), ret) < 0) {
			perror("uprobe_multi");
			return 1;
		}
	} else if (!strcmp(mode, "pmu")) {
		if (read_int("/sys/bus/event_source/devices/uprobe/type", &v))
			return 1;
		a.type = (__u32)v;
		a.config = ret ? 1 : 0; /* format/retprobe: config:0 */
		a.config1 = (__u64)(unsigned long)file;
		a.config2 = strtoull(argv[4], NULL, 0);
		fd = perf_open(&a, pid, 1);
		if (fd < 0 || attach(prog, fd))
			return 1;
	} else {
		snprintf(group, sizeof(group), "inherit_check_%d", getpid());
		snprintf(line, sizeof(line), "%c:%s/site %s:%s\n", ret ? 'r' : 'p', group, file,
			 argv[4]);
		if (tracefs_write(line)) {
			perror(UPROBE_EVENTS);
			return 1;
		}
		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/site/id", group);
		if (read_int(path, &v))
			return 1;
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = (__u64)v;
		fd = perf_open(&a, pid, !!strcmp(mode, "tracefs") ? 0 : 1);
		if (fd < 0 || attach(prog, fd))
			return 1;
		if (strcmp(mode, "tracefs") && perf_open(&a, pid, 1) < 0)
			return 1;
		if (!strcmp(mode, "threads") && filter_threads(&a, pid))
			return 1;
	}
	snprintf(path, sizeof(path), "%s/attached", dir);
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	snprintf(path, sizeof(path), "%s/stop", dir);
	while (access(path, F_OK))
		usleep(10000);
	map = bpf_object__find_map_fd_by_name(obj, "counts");
	while (!bpf_map_get_next_key(map, prev, &key)) {
		bpf_map_lookup_elem(map, &key, &n);
		printf("tgid %u: %llu\n", key, n);
		prev = &key;
	}
	fflush(stdout);
	/* The events go with their descriptors; then the tracefs event can be removed. */
	for (int i = 3; i < 1024; i++)
		close(i);
	if (group[0]) {
		snprintf(line, sizeof(line), "-:%s/site\n", group);
		if (tracefs_write(line))
			fprintf(stderr, "removing %s/site: %s\n", group, strerror(errno));
	}
	return 0;
}
