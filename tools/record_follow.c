// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Following ring records through the code (tools/record_path.py --follow): linked into a
 * build compiled with -finstrument-functions, it writes, for the first BPFSIGHT_FOLLOW_N calls
 * of the function at BPFSIGHT_FOLLOW_FN (the driver's record callback, its address from nm),
 * every function entered and left inside it, to BPFSIGHT_FOLLOW_OUT: "R" at each record, then
 * "E ADDR" and "L" lines, "X" at its end. Never part of bpfsight itself. Each followed call is
 * written with one write(2) at its end, from a buffer of its own: a forked child (the link
 * reaper, the broker) writes nothing of it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NO_TRACE __attribute__((no_instrument_function))

static void *target;
static int fd = -1;
static long left = -1;
static pid_t owner;
static __thread int depth; /* > 0: inside a followed call */
static __thread char buf[1 << 20];
static __thread size_t used;

NO_TRACE static void init(void)
{
	const char *fn = getenv("BPFSIGHT_FOLLOW_FN"), *path = getenv("BPFSIGHT_FOLLOW_OUT");
	const char *n = getenv("BPFSIGHT_FOLLOW_N");

	left = n ? atol(n) : 2000;
	owner = getpid();
	if (fn && path) {
		target = (void *)strtoul(fn, NULL, 16);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		left = 0;
}

NO_TRACE static void put(const char *s)
{
	size_t n = strlen(s);

	if (used + n < sizeof(buf)) {
		memcpy(buf + used, s, n);
		used += n;
	}
}

NO_TRACE void __cyg_profile_func_enter(void *fn, void *site)
{
	char line[32];

	if (left < 0)
		init();
	if (depth) {
		depth++;
		snprintf(line, sizeof(line), "E %p\n", fn);
		put(line);
	} else if (fn == target && left > 0 && getpid() == owner) {
		left--;
		depth = 1;
		used = 0;
		put("R\n");
	}
}

NO_TRACE void __cyg_profile_func_exit(void *fn, void *site)
{
	if (!depth)
		return;
	if (--depth) {
		put("L\n");
		return;
	}
	put("X\n");
	if (write(fd, buf, used) < 0)
		left = 0;
	used = 0;
}
