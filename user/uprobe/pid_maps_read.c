// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What a read of /proc/PID/maps can be trusted for (pid_maps_read.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "pid_maps_read.h"

int pid_maps_read__alive(pid_t pid)
{
	char fn[64];
	FILE *f;
	int c;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "re");
	if (!f)
		return 0;
	c = fgetc(f);
	fclose(f);
	return c != EOF;
}

static int overlaps_any(const struct pid_mapping *l, __u32 n, const struct pid_mapping *m)
{
	for (__u32 i = 0; i < n; i++)
		if (m->start < l[i].end && l[i].start < m->end)
			return 1;
	return 0;
}

int pid_maps_read__add(struct pid_mapping **old, __u32 *nold, const struct pid_mapping *v, __u32 n)
{
	struct pid_mapping *all = realloc(*old, ((size_t)*nold + n) * sizeof(*all));
	__u32 k;

	if (!all)
		return -ENOMEM;
	k = *nold;
	for (__u32 i = 0; i < n; i++)
		if (!overlaps_any(all, *nold, &v[i]))
			all[k++] = v[i];
	*old = all;
	*nold = k;
	return 0;
}
