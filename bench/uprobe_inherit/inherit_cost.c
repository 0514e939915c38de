// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the "anchor" way of inherit_check.c costs for many sites (bench/RESULTS.md):
 * `inherit_cost PID K CLOSERS < OFFSETS` makes K tracefs uprobe events on libc (offsets in hex,
 * one a line), for each an anchor event with count.bpf.o linked (a cookie per site) and an
 * inherited filter event on each of PID's threads; then closes each site's descriptors from
 * CLOSERS threads and removes the events, timing each step. With $DIR set, it creates
 * $DIR/attached once all are open and waits for $DIR/stop before closing.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define MAX_SITES   2000
#define MAX_THREADS 256

static int site_fds[MAX_SITES][MAX_THREADS + 2];
static int nsites, per_site, next_site;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *closer(void *arg)
{
	for (;;) {
		int s;

		pthread_mutex_lock(&lock);
		s = next_site++;
		pthread_mutex_unlock(&lock);
		if (s >= nsites)
			return arg;
		for (int i = 0; i < per_site; i++)
			close(site_fds[s][i]);
	}
}

static int tracefs_write(int fd, const char *line)
{
	return write(fd, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	int tids[MAX_THREADS], ntids = 0, prog, ufd, nclosers;
	unsigned long off[MAX_SITES];
	pthread_t th[64];
	struct dirent *e;
	char line[512];
	double t0, t1, t2, t3;
	DIR *d;

	if (argc < 4)
		return 2;
	nsites = atoi(argv[2]);
	nclosers = atoi(argv[3]);
	if (nsites > MAX_SITES || nclosers < 1 || nclosers > 64)
		return 2;
	/* sites x (threads + 2) descriptors */
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < nsites; i++)
		if (scanf("%lx", &off[i]) != 1)
			return 2;
	snprintf(line, sizeof(line), "/proc/%s/task", argv[1]);
	d = opendir(line);
	while (d && (e = readdir(d)) && ntids < MAX_THREADS)
		if (atoi(e->d_name) > 0)
			tids[ntids++] = atoi(e->d_name);
	if (d)
		closedir(d);
	struct bpf_object *obj = bpf_object__open_file("count.bpf.o", NULL);
	if (!obj || bpf_object__load(obj))
		return 1;
	prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "count"));
	ufd = open("/sys/kernel/tracing/uprobe_events", O_WRONLY | O_APPEND);
	t0 = now();
	for (int s = 0; s < nsites; s++) {
		snprintf(line, sizeof(line), "p:inherit_cost_%d/s%d %s:0x%lx\n", getpid(), s,
			 "/usr/lib/x86_64-linux-gnu/libc.so.6", off[s]);
		if (tracefs_write(ufd, line))
			return 1;
	}
	t1 = now();
	for (int s = 0; s < nsites; s++) {
		struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_TRACEPOINT };
		LIBBPF_OPTS(bpf_link_create_opts, o, .perf_event.bpf_cookie = s);
		FILE *f;
		int n = 0;

		snprintf(line, sizeof(line), "/sys/kernel/tracing/events/inherit_cost_%d/s%d/id",
			 getpid(), s);
		f = fopen(line, "re");
		if (!f || fscanf(f, "%llu", &a.config) != 1)
			return 1;
		fclose(f);
		site_fds[s][n++] = (int)syscall(SYS_perf_event_open, &a, atoi(argv[1]), -1, -1,
						PERF_FLAG_FD_CLOEXEC);
		site_fds[s][n] = bpf_link_create(prog, site_fds[s][0], BPF_PERF_EVENT, &o);
		if (site_fds[s][0] < 0 || site_fds[s][n++] < 0)
			return 1;
		a.inherit = 1;
		for (int t = 0; t < ntids; t++) {
			site_fds[s][n] = (int)syscall(SYS_perf_event_open, &a, tids[t], -1, -1,
						      PERF_FLAG_FD_CLOEXEC);
			if (site_fds[s][n++] < 0) {
				perror("perf_event_open");
				return 1;
			}
		}
		per_site = n;
	}
	t2 = now();
	if (getenv("DIR")) {
		snprintf(line, sizeof(line), "%s/attached", getenv("DIR"));
		close(open(line, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
		snprintf(line, sizeof(line), "%s/stop", getenv("DIR"));
		while (access(line, F_OK))
			usleep(10000);
	}
	for (int i = 0; i < nclosers; i++)
		pthread_create(&th[i], NULL, closer, NULL);
	for (int i = 0; i < nclosers; i++)
		pthread_join(th[i], NULL);
	t3 = now();
	for (int s = 0; s < nsites; s++) {
		snprintf(line, sizeof(line), "-:inherit_cost_%d/s%d\n", getpid(), s);
		if (tracefs_write(ufd, line))
			perror("removing an event");
	}
	printf("%d sites, %d threads, %d descriptors: events made %.3f s, opened and linked "
	       "%.3f s, closed (%d threads) %.3f s, removed %.3f s\n",
	       nsites, ntids, nsites * per_site, t1 - t0, t2 - t1, nclosers, t3 - t2, now() - t3);
	return 0;
}
