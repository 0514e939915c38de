// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What reading a live CPython's thread names costs (user/python/py_threads.h), without a
 * recorder:
 *
 *   names_bench PID [READS]
 *
 * Finds PID's interpreter as a recording does (the uprobe manager's discovery, py_find),
 * then reads its threads' names READS times (default 200). Prints one JSON line: the threads
 * named, the first read's ns (it searches sys.modules for threading), the median and
 * minimum ns of the others, and the median ns of one 8-byte read of its memory (the floor:
 * each of the names' reads costs about that).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "gil_python.h"
#include "mono_clock.h"
#include "py_find.h"
#include "py_threads.h"
#include "record_ctx.h"
#include "uprobe_mgr.h"

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static struct py_thread_name names[4096];
	static struct gil_py py;
	static __u64 ns[100000];
	struct record_opts o = {};
	struct record_ctx ctx = { .opts = &o };
	pid_t pid = argc > 1 ? atoi(argv[1]) : 0;
	int reads = argc > 2 ? atoi(argv[2]) : 200, n = 0, err, fd;
	struct uprobe_mgr *m;
	struct py_threads *t;
	struct py_find *f;
	char path[64];
	__u64 t0, first, word, floor_ns[1000];

	if (pid <= 0 || reads < 2 || reads > 100000)
		return fprintf(stderr, "usage: names_bench PID [READS]\n"), 2;
	ctx.self_pid = getpid();
	m = uprobe_mgr__new(&ctx);
	f = m ? py_find__new(m, &err) : NULL;
	t = py_threads__new();
	if (!f || !t || py_find__inspect(f, pid, &py) || py.status != GIL_PY_READY ||
	    py_threads__add(t, pid, &py))
		return fprintf(stderr, "names_bench: pid %d: no CPython whose names are read\n",
			       pid),
		       1;
	t0 = mono_now_ns();
	n = py_threads__read(t, pid, names, 4096);
	first = mono_now_ns() - t0;
	for (int i = 0; i < reads - 1; i++) {
		t0 = mono_now_ns();
		if (py_threads__read(t, pid, names, 4096) != n)
			return fprintf(stderr, "names_bench: the thread count changed\n"), 1;
		ns[i] = mono_now_ns() - t0;
	}
	qsort(ns, reads - 1, sizeof(ns[0]), cmp_u64);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	for (int i = 0; i < 1000; i++) {
		t0 = mono_now_ns();
		if (pread(fd, &word, 8, (off_t)py.runtime) != 8)
			return 1;
		floor_ns[i] = mono_now_ns() - t0;
	}
	qsort(floor_ns, 1000, sizeof(floor_ns[0]), cmp_u64);
	printf("{\"threads\": %d, \"first_ns\": %llu, \"median_ns\": %llu, \"min_ns\": %llu, "
	       "\"read8_ns\": %llu, \"version\": \"3.%u\"}\n",
	       n, (unsigned long long)first, (unsigned long long)ns[(reads - 1) / 2],
	       (unsigned long long)ns[0], (unsigned long long)floor_ns[500],
	       py.version >> 16 & 0xff);
	return 0;
}
