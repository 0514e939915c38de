// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Starts without libcudart (not linked, not mapped), then dlopen()s it and calls it through
 * dlsym a known number of times: tests that libraries loaded while recording get probed.
 *
 *   cuda_dlopen [--wait-stdin] [--before-ms A] [--after-ms B] [--lib PATH] N
 *
 *   --wait-stdin  print "pid P", then block on a read of stdin before the dlopen
 *   --before-ms   sleep A ms before the dlopen (default 0)
 *   --after-ms    sleep B ms between the dlopen and the first call (default 300): the
 *                 delay within which -p and -a must have probed the new library; launch
 *                 mode stops the process at the dlopen and needs none. -1: print
 *                 "dlopened P" and wait for a byte on stdin instead (a test's cue, given
 *                 once the tracer says the library is probed)
 *   --lib         the library to dlopen (default /usr/local/cuda/lib64/libcudart.so.13,
 *                 then the soname through the loader's search path)
 *
 * After the delay, N times each: cudaMalloc(&p, 65536), cudaMemcpy(p, hbuf, 4096, HtoD),
 * cudaDeviceSynchronize(), cudaFree(p); all fail without a GPU (35), p keeps 0xd0000000.
 * Output: "pid P", then "dlopen P NS" (CLOCK_MONOTONIC when dlopen returned), "t0 P NS"
 * (just before the first call), "t1 P NS" (after the last), "ptr P hbuf 0xHEX" (the copies'
 * source) and "ret P cudaMalloc N" (the first call's return code).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define P_DBUF 0xd0000000UL
#define HTOD   1 /* cudaMemcpyHostToDevice */

typedef int (*malloc_fn)(void **, size_t);
typedef int (*memcpy_fn)(void *, const void *, size_t, int);
typedef int (*sync_fn)(void);
typedef int (*free_fn)(void *);

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *lib = "/usr/local/cuda/lib64/libcudart.so.13";
	long before_ms = 0, after_ms = 300, n;
	unsigned long long t_dl, t0, t1;
	int wait_stdin = 0, first = 0, i;
	malloc_fn cmalloc;
	memcpy_fn cmemcpy;
	sync_fn csync;
	free_fn cfree;
	void *h, *p;
	char *hbuf;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait-stdin"))
			wait_stdin = 1;
		else if (!strcmp(argv[i], "--before-ms") && i + 1 < argc)
			before_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--after-ms") && i + 1 < argc)
			after_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib = argv[++i];
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: cuda_dlopen [--wait-stdin] [--before-ms A] [--after-ms B] "
				"[--lib PATH] N\n");
		return 2;
	}
	n = atol(argv[i]);
	hbuf = calloc(1, 65536);
	if (!hbuf)
		return 4;
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (wait_stdin) {
		char c;

		if (read(0, &c, 1) != 1)
			return 3;
	}
	if (before_ms)
		usleep(before_ms * 1000);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "cuda_dlopen: %s\n", dlerror());
		return 5;
	}
	t_dl = now_ns();
	cmalloc = (malloc_fn)dlsym(h, "cudaMalloc");
	cmemcpy = (memcpy_fn)dlsym(h, "cudaMemcpy");
	csync = (sync_fn)dlsym(h, "cudaDeviceSynchronize");
	cfree = (free_fn)dlsym(h, "cudaFree");
	if (!cmalloc || !cmemcpy || !csync || !cfree) {
		fprintf(stderr, "cuda_dlopen: missing symbol in %s\n", lib);
		return 6;
	}
	if (after_ms < 0) {
		char c;

		printf("dlopened %d\n", getpid());
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 3;
	} else if (after_ms) {
		usleep(after_ms * 1000);
	}
	t0 = now_ns();
	for (long k = 0; k < n; k++) {
		p = (void *)(uintptr_t)P_DBUF;
		if (k == 0)
			first = cmalloc(&p, 65536);
		else
			cmalloc(&p, 65536);
		cmemcpy(p, hbuf, 4096, HTOD);
		csync();
		cfree(p);
	}
	t1 = now_ns();
	printf("dlopen %d %llu\nt0 %d %llu\nt1 %d %llu\n", getpid(), t_dl, getpid(), t0, getpid(),
	       t1);
	printf("ptr %d hbuf %p\nret %d cudaMalloc %d\n", getpid(), (void *)hbuf, getpid(), first);
	free(hbuf);
	return 0;
}
