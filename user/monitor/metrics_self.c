// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The monitor's own cost, what an operator watches it by: CPU time, resident memory and open
 * fds under the names every Prometheus exporter uses (process_*), and the run time of its BPF
 * programs in the kernel (the kernel's bpf_stats, which cmd_monitor.c turns on while it runs:
 * the time the probes take from the traced processes).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include "metrics.h"

#define MAX_PROGS 256

struct prog_stat {
	char name[BPF_OBJ_NAME_LEN];
	unsigned long long run_ns, runs;
};

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

/* run_time_ns and run_cnt of the BPF program behind FD, from its fdinfo. */
static int prog_fdinfo(int fd, unsigned long long *id, unsigned long long *run_ns,
		       unsigned long long *runs)
{
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return -1;
	*id = *run_ns = *runs = 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "prog_id: %llu", id);
		sscanf(line, "run_time_ns: %llu", run_ns);
		sscanf(line, "run_cnt: %llu", runs);
	}
	fclose(f);
	return *id ? 0 : -1;
}

/* Our BPF programs are the bpf-prog fds we hold; summed by name (a family's copies). */
static int collect_progs(struct prog_stat *ps, int max)
{
	unsigned long long ids[MAX_PROGS], id, run_ns, runs;
	int n = 0, nids = 0;
	char path[64], target[64];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = atoi(e->d_name), i, seen = 0;
		ssize_t tl;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		tl = readlink(path, target, sizeof(target) - 1);
		if (tl <= 0)
			continue;
		target[tl] = 0;
		if (strcmp(target, "anon_inode:bpf-prog") || prog_fdinfo(fd, &id, &run_ns, &runs))
			continue;
		for (i = 0; i < nids && !seen; i++)
			seen = ids[i] == id;
		if (seen || nids == MAX_PROGS || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		ids[nids++] = id;
		for (i = 0; i < n && strcmp(ps[i].name, info.name); i++)
			;
		if (i == n) {
			if (n == max)
				continue;
			snprintf(ps[n++].name, sizeof(ps[0].name), "%s", info.name);
		}
		ps[i].run_ns += run_ns;
		ps[i].runs += runs;
	}
	closedir(d);
	return n;
}

void metrics_self__render(FILE *f)
{
	static struct prog_stat ps[MAX_PROGS];
	struct rusage ru;
	long rss_pages = 0, fds = count_fds();
	FILE *statm = fopen("/proc/self/statm", "re");
	int n, i;

	if (statm) {
		if (fscanf(statm, "%*s %ld", &rss_pages) != 1)
			rss_pages = 0;
		fclose(statm);
	}
	getrusage(RUSAGE_SELF, &ru);
	fprintf(f,
		"# HELP process_cpu_seconds_total CPU time the monitor used (user + system).\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total %.6f\n",
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	fprintf(f,
		"# HELP process_resident_memory_bytes The monitor's resident memory.\n"
		"# TYPE process_resident_memory_bytes gauge\n"
		"process_resident_memory_bytes %ld\n",
		rss_pages * sysconf(_SC_PAGESIZE));
	fprintf(f,
		"# HELP process_open_fds File descriptors the monitor holds.\n"
		"# TYPE process_open_fds gauge\n"
		"process_open_fds %ld\n",
		fds);
	memset(ps, 0, sizeof(ps));
	n = collect_progs(ps, MAX_PROGS);
	for (i = 0; i < n && !ps[i].runs; i++)
		;
	if (i == n)
		return; /* bpf_stats is off (--bpf-stats): the kernel counts nothing */
	fprintf(f, "# HELP bpfsight_bpf_run_seconds_total Time the monitor's BPF programs ran in "
		   "the kernel (bpf_stats), by program.\n"
		   "# TYPE bpfsight_bpf_run_seconds_total counter\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "bpfsight_bpf_run_seconds_total{program=\"%s\"} %.9f\n", ps[i].name,
			ps[i].run_ns / 1e9);
	fprintf(f, "# HELP bpfsight_bpf_runs_total Runs of the monitor's BPF programs, by "
		   "program.\n"
		   "# TYPE bpfsight_bpf_runs_total counter\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "bpfsight_bpf_runs_total{program=\"%s\"} %llu\n", ps[i].name,
			ps[i].runs);
}
