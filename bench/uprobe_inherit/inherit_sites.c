// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * inherit_check.c's "anchor" way with many sites in ONE tracefs event (appended lines of the
 * same name): `inherit_sites PID FILE < OFFSETS` makes the event, opens its anchor (site.bpf.o
 * linked, cookie 7) and one inherited filter event on PID, creates $DIR/attached, waits for
 * $DIR/stop, prints the calls per process and site, then times the close and the removal.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

struct site_key {
	__u32 tgid;
	__u32 cookie;
	__u64 ino;
	__u64 off;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_TRACEPOINT };
	LIBBPF_OPTS(bpf_link_create_opts, o, .perf_event.bpf_cookie = 7);
	struct site_key key, *prev = NULL;
	const char *dir = getenv("DIR");
	struct bpf_object *obj;
	unsigned long long n;
	unsigned long off;
	int ufd, prog, anchor, link, filter, map, nsites = 0, len;
	double t0, t1, t2, t3, t4;
	char line[512];
	FILE *f;

	if (argc < 3 || !dir)
		return 2;
	obj = bpf_object__open_file("site.bpf.o", NULL);
	if (!obj || bpf_object__load(obj))
		return 1;
	prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "site"));
	ufd = open("/sys/kernel/tracing/uprobe_events", O_WRONLY | O_APPEND);
	t0 = now();
	while (scanf("%lx", &off) == 1) {
		len = snprintf(line, sizeof(line), "p:inherit_sites_%d/all %s:0x%lx\n", getpid(),
			       argv[2], off);
		if (write(ufd, line, len) != len) {
			perror("appending a site");
			return 1;
		}
		nsites++;
	}
	t1 = now();
	snprintf(line, sizeof(line), "/sys/kernel/tracing/events/inherit_sites_%d/all/id",
		 getpid());
	f = fopen(line, "re");
	if (!f || fscanf(f, "%llu", &a.config) != 1)
		return 1;
	fclose(f);
	anchor = (int)syscall(SYS_perf_event_open, &a, atoi(argv[1]), -1, -1, PERF_FLAG_FD_CLOEXEC);
	link = bpf_link_create(prog, anchor, BPF_PERF_EVENT, &o);
	a.inherit = 1;
	filter = (int)syscall(SYS_perf_event_open, &a, atoi(argv[1]), -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (anchor < 0 || link < 0 || filter < 0) {
		perror("perf_event_open");
		return 1;
	}
	t2 = now();
	snprintf(line, sizeof(line), "%s/attached", dir);
	close(open(line, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	snprintf(line, sizeof(line), "%s/stop", dir);
	while (access(line, F_OK))
		usleep(10000);
	map = bpf_object__find_map_fd_by_name(obj, "sites");
	while (!bpf_map_get_next_key(map, prev, &key)) {
		bpf_map_lookup_elem(map, &key, &n);
		printf("tgid %u: cookie %u, inode %llu, offset 0x%llx: %llu\n", key.tgid,
		       key.cookie, key.ino, key.off, n);
		prev = &key;
	}
	t3 = now();
	close(link);
	close(anchor);
	close(filter);
	t4 = now();
	len = snprintf(line, sizeof(line), "-:inherit_sites_%d/all\n", getpid());
	if (write(ufd, line, len) != len)
		perror("removing the event");
	printf("%d sites in one event: made %.3f s, opened and linked %.3f s, closed %.3f s\n",
	       nsites, t1 - t0, t2 - t1, t4 - t3);
	return 0;
}
