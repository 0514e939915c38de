// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * map_exec_static FILE: a static program (no ld.so of its own) that maps FILE executable,
 * says "ready" and waits for its stdin to close. Traced with -p beside a launched CMD that
 * runs FILE, it has the recording examine FILE before CMD's exec while ld.so is still
 * unknown: what a scan of CMD in the middle of its exec did on a loaded machine
 * (tests/e2e/test_mem.py).
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	char c;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		perror("map_exec_static");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
