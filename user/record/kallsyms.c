// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A kernel function's code from /proc/kallsyms (kallsyms.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "kallsyms.h"

int kallsyms__range_in(FILE *f, const char *name, __u64 *lo, __u64 *hi)
{
	char line[512], sym[256], type;
	unsigned long long addr;
	int found = 0;

	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3)
			continue;
		if (found) {
			if (addr <= *lo)
				continue; /* an alias at the same address */
			*hi = addr;
			return 0;
		}
		if ((type == 't' || type == 'T') && !strcmp(sym, name)) {
			if (!addr)
				return -EPERM;
			*lo = addr;
			found = 1;
		}
	}
	return found ? -EINVAL : -ENOENT;
}

static FILE *held;

int kallsyms__hold(void)
{
	if (!held)
		held = fopen("/proc/kallsyms", "re");
	return held ? 0 : -errno;
}

int kallsyms__range(const char *name, __u64 *lo, __u64 *hi)
{
	FILE *f = held;
	int err;

	if (f)
		rewind(f);
	else if (!(f = fopen("/proc/kallsyms", "re")))
		return -errno;
	err = kallsyms__range_in(f, name, lo, hi);
	if (f != held)
		fclose(f);
	return err;
}
