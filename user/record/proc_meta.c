// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "proc_meta.h"
#include "record_ctx.h"

/* Read a small /proc file into BUF (NUL-terminated); returns bytes or negative errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (total < (ssize_t)len - 1 && (n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

static void copy_comm(char *dst, const char *src)
{
	size_t n = strcspn(src, "\n");

	memset(dst, 0, BS_COMM_LEN);
	memcpy(dst, src, n < BS_COMM_LEN - 1 ? n : BS_COMM_LEN - 1);
}

int proc_meta__parse_stat(const char *buf, __u32 *ppid, __u64 *start_ticks, char *state)
{
	const char *p = strrchr(buf, ')');
	unsigned long long v;
	char *end;
	int field;

	if (!p || p[1] != ' ')
		return -EINVAL;
	p += 2;
	*state = *p;
	for (field = 3; *p && field <= 22; field++) {
		v = strtoull(p, &end, 10);
		p = end;
		if (field == 3) /* the state letter: strtoull read nothing */
			v = 0, p++;
		if (field == 4)
			*ppid = v;
		if (field == 22) {
			*start_ticks = v;
			return 0;
		}
		while (*p == ' ')
			p++;
	}
	return -EINVAL;
}

static int parse_stat(pid_t pid, __u32 *ppid, __u64 *start_ticks, char *state)
{
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	return proc_meta__parse_stat(buf, ppid, start_ticks, state);
}

int proc_meta__parent(pid_t pid, __u32 *ppid, char comm[BS_COMM_LEN])
{
	char path[64], buf[1024], state, *open_, *close_;
	__u64 start;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, buf, sizeof(buf)) <= 0 ||
	    proc_meta__parse_stat(buf, ppid, &start, &state))
		return -ESRCH;
	/* "PID (COMM) S ...": the comm may hold spaces and parentheses, the last ')' ends it. */
	open_ = strchr(buf, '(');
	close_ = strrchr(buf, ')');
	memset(comm, 0, BS_COMM_LEN);
	if (open_ && close_ > open_)
		memcpy(comm, open_ + 1,
		       close_ - open_ - 1 < BS_COMM_LEN - 1 ? close_ - open_ - 1 : BS_COMM_LEN - 1);
	return 0;
}

void proc_meta__gone(struct record_ctx *ctx, pid_t pid, __u32 ppid, const char *comm)
{
	struct bs_process p;

	memset(&p, 0, sizeof(p));
	record_ctx__hdr(&p.h, BS_REC_PROCESS, sizeof(p), pid, pid, 0);
	p.ppid = ppid;
	copy_comm(p.comm, comm);
	record_ctx__write(ctx, &p);
}

pid_t proc_meta__tgid(pid_t tid)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	p = strstr(buf, "\nTgid:");
	if (!p)
		return -EINVAL;
	return (pid_t)strtol(p + 6, NULL, 10);
}

int proc_meta__start(pid_t pid, __u64 *start_ticks)
{
	char state = 0;
	__u32 ppid;

	if (parse_stat(pid, &ppid, start_ticks, &state))
		return -ESRCH;
	return state != 'Z' && state != 'X' ? 0 : -ESRCH;
}

int proc_meta__alive(pid_t pid)
{
	__u64 start;

	return !proc_meta__start(pid, &start);
}

int proc_meta__alive_since(pid_t pid, __u64 start_ticks)
{
	__u64 start;

	return !proc_meta__start(pid, &start) && start == start_ticks;
}

/* Convert /proc start ticks (since boot, BOOTTIME) to CLOCK_MONOTONIC ns. */
static __u64 start_to_mono(__u64 ticks)
{
	struct timespec b, m;
	long hz = sysconf(_SC_CLK_TCK);
	__u64 boot_ns, mono_ns, start_ns;

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &b) || clock_gettime(CLOCK_MONOTONIC, &m))
		return 0;
	boot_ns = b.tv_sec * 1000000000ull + b.tv_nsec;
	mono_ns = m.tv_sec * 1000000000ull + m.tv_nsec;
	start_ns = ticks * (1000000000ull / hz);
	/* Time suspended before the start cannot be placed on MONOTONIC: clamp. */
	return start_ns + mono_ns > boot_ns ? start_ns + mono_ns - boot_ns : 0;
}

static __u32 intern_file(struct record_ctx *ctx, const char *path, int nul_to_space)
{
	char buf[4096];
	ssize_t n = read_small(path, buf, sizeof(buf));

	if (n <= 0)
		return 0;
	if (nul_to_space) {
		while (n > 0 && buf[n - 1] == 0)
			n--;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == 0)
				buf[i] = ' ';
		buf[n] = 0;
	}
	return record_ctx__intern(ctx, buf);
}

static void snapshot_threads(struct record_ctx *ctx, pid_t pid)
{
	char path[64], comm[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct bs_thread t;
		pid_t tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
		if (read_small(path, comm, sizeof(comm)) <= 0)
			continue;
		record_ctx__hdr(&t.h, BS_REC_THREAD, sizeof(t), pid, tid, 0);
		copy_comm(t.name, comm);
		record_ctx__write(ctx, &t);
	}
	closedir(d);
}

int proc_meta__snapshot(struct record_ctx *ctx, pid_t pid, int with_threads)
{
	char path[64], exe[4096], comm[64];
	struct bs_process p;
	__u64 start = 0;
	char state;
	ssize_t n;

	memset(&p, 0, sizeof(p));
	if (parse_stat(pid, &p.ppid, &start, &state))
		return -ESRCH;
	record_ctx__hdr(&p.h, BS_REC_PROCESS, sizeof(p), pid, pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (read_small(path, comm, sizeof(comm)) > 0)
		copy_comm(p.comm, comm);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	p.cmdline_id = intern_file(ctx, path, 1);
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		p.exe_id = record_ctx__intern(ctx, exe);
	}
	p.start_ns = start_to_mono(start);
	{
		char status[2048], *u;

		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		if (read_small(path, status, sizeof(status)) > 0 && (u = strstr(status, "\nUid:")))
			p.uid = strtoul(u + 5, NULL, 10);
	}
	record_ctx__write(ctx, &p);
	if (with_threads)
		snapshot_threads(ctx, pid);
	return 0;
}

int proc_meta__snapshot_all(struct record_ctx *ctx)
{
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name);

		if (pid > 0 && pid != ctx->self_pid)
			proc_meta__snapshot(ctx, pid, 1);
	}
	closedir(d);
	return 0;
}

void proc_meta__observe(struct record_ctx *ctx, const struct bs_hdr *rec)
{
	if (rec->type == BS_REC_FORK) {
		const struct bs_fork *f = (const void *)rec;

		if (f->child_pid == f->child_tid)
			proc_meta__snapshot(ctx, f->child_pid, 0);
	} else if (rec->type == BS_REC_EXEC) {
		proc_meta__snapshot(ctx, rec->pid, 0);
	}
}

__u64 proc_meta__vdso(pid_t pid)
{
	__u64 aux[2], at = 0;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, aux, sizeof(aux)) == sizeof(aux) && aux[0] != AT_NULL)
		if (aux[0] == AT_SYSINFO_EHDR)
			at = aux[1];
	close(fd);
	return at;
}

int proc_meta__env_rank(pid_t pid)
{
	char path[64], *buf = malloc(1 << 16), *end;
	int rank = -1, local = -1, fd;
	ssize_t n = 0, got;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && n < (1 << 16) - 1 && (got = read(fd, buf + n, (1 << 16) - 1 - n)) > 0)
		n += got;
	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; buf && i < n; i += (ssize_t)strnlen(buf + i, n - i) + 1) {
		int *at = !strncmp(buf + i, "RANK=", 5)		 ? &rank
			  : !strncmp(buf + i, "LOCAL_RANK=", 11) ? &local
								 : NULL;
		const char *v = at == &rank ? buf + i + 5 : buf + i + 11;
		long r;

		if (!at || i + (v - (buf + i)) >= n)
			continue;
		r = strtol(v, &end, 10);
		if (end != v && end < buf + n && !*end && r >= 0 && r < (1l << 30))
			*at = (int)r;
	}
	free(buf);
	return rank >= 0 ? rank : local;
}

int proc_meta__cpu_ns(pid_t tid, __u64 *ns)
{
	char path[64], buf[128];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -EIO;
	buf[got] = 0;
	*ns = strtoull(buf, NULL, 10);
	return 0;
}
