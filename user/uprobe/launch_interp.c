// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The dynamic linker a launched command will run under (launch_interp.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_file.h"
#include "launch_interp.h"
#include "safe_open.h"

/* CMD as execvp would run it, into OUT: itself with a '/', else the first PATH entry. */
static int resolve(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(cmd, '/'))
		return snprintf(out, len, "%s", cmd) < (int)len ? 0 : -ENOENT;
	for (p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p; p = *end ? end + 1 : end) {
		size_t n;

		end = strchrnul(p, ':');
		n = (size_t)(end - p);
		if (snprintf(out, len, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", cmd) >= (int)len)
			continue;
		if (!access(out, X_OK))
			return 0;
	}
	return -ENOENT;
}

/* PT_INTERP of the ELF file open on FD into OUT; -ENOENT without one (a static program). */
static int elf_interp(int fd, char *out, size_t len)
{
	int err = -ENOENT;
	GElf_Phdr ph;
	size_t n = 0;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_file__open(fd, 0, &(int){ 0 })))
		return -ENOENT;
	if (!elf_getphdrnum(elf, &n))
		for (size_t i = 0; i < n; i++) {
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			if (ph.p_filesz && ph.p_filesz <= len &&
			    pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) ==
				    (ssize_t)ph.p_filesz &&
			    !out[ph.p_filesz - 1])
				err = 0;
			break;
		}
	elf_end(elf);
	return err;
}

/* FILE's dynamic linker, a "#!" script's interpreter's when DEPTH allows one more. */
static int interp_of(const char *file, char *out, size_t len, int depth)
{
	char head[PATH_MAX + 2], *nl;
	int fd = safe_open__regular(file, NULL), err;
	ssize_t n;

	if (fd < 0)
		return -ENOENT;
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!') {
		close(fd);
		head[n] = 0;
		nl = head + 2 + strspn(head + 2, " \t");
		nl[strcspn(nl, " \t\n")] = 0;
		return depth && *nl == '/' ? interp_of(nl, out, len, depth - 1) : -ENOENT;
	}
	err = elf_interp(fd, out, len);
	close(fd);
	return err;
}

int launch_interp(const char *cmd, char *out, size_t len)
{
	char file[PATH_MAX];

	if (!cmd || resolve(cmd, file, sizeof(file)))
		return -ENOENT;
	return interp_of(file, out, len, 1);
}
