// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The osrt family's column in `bpfsight top`: each thread's slowest system call of the
 * interval, from the calls recorded one by one (at least --osrt-threshold: top takes
 * monitor's 100us), named ("futex 12ms"). A call is seen when it returns.
 */
#include <string.h>
#include "osrt.h"
#include "syscall_names.h"
#include "top_family.h"

static const struct top_column osrt_columns[] = {
	{ "syscall", "SLOWEST SYSCALL", "slowest system call that ended (osrt)", TOP_LONGEST, 0,
	  12 },
	{ 0 },
};

static void osrt_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	const struct bs_syscall *s = (const void *)h;
	const char *name;

	if (h->type != BS_REC_SYSCALL || h->size < sizeof(*s))
		return;
	name = syscall_name(s->nr);
	/* bpfsight's own return probes enter the kernel by this call: not the application's */
	if (name && !strcmp(name, "uretprobe"))
		return;
	top__longest(t, &family_osrt, 0, h->pid, h->tid, s->dur, name ? name : "syscall");
}

const struct top_family osrt_top = {
	.columns = osrt_columns,
	.record = osrt_top_record,
};
