// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Dropping what recording does not need (privileges.h). */
#include <errno.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "privileges.h"
#include "uprobe_broker.h"

#define BIT(c) (1ull << (c))

static __u64 permitted_now(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return 0;
	return d[0].permitted | (__u64)d[1].permitted << 32;
}

int privileges__limit(__u64 keep)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	keep &= permitted_now();
	/* The bounding set first: dropping from it takes CAP_SETPCAP, which goes next. */
	for (int c = 0; c < 64; c++)
		if (!(keep & BIT(c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL)
			break; /* past the kernel's last capability */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	d[0].permitted = d[0].effective = (__u32)keep;
	d[1].permitted = d[1].effective = (__u32)(keep >> 32);
	if (syscall(SYS_capset, &h, d))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int privileges__drop(int writes_later)
{
	static int dropped;
	__u64 have = permitted_now(), keep;

	if (dropped++)
		return 0;
	keep = BIT(CAP_BPF) | BIT(CAP_PERFMON) | BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH) |
	       BIT(CAP_CHECKPOINT_RESTORE) | BIT(CAP_SYS_RESOURCE) | BIT(CAP_SYS_NICE) |
	       (writes_later ? BIT(CAP_DAC_OVERRIDE) : 0);
	/*
	 * Kernels before 5.8 have neither CAP_BPF nor CAP_PERFMON: BPF needs CAP_SYS_ADMIN
	 * there. Elsewhere it goes, and the perf-event uprobes attached later (which need it:
	 * uprobe_broker.h) are opened by a broker forked now, which keeps it.
	 */
	if (!(have & BIT(CAP_BPF)) || !(have & BIT(CAP_PERFMON)) ||
	    ((have & BIT(CAP_SYS_ADMIN)) && uprobe_broker__start()))
		keep |= BIT(CAP_SYS_ADMIN);
	return privileges__limit(keep);
}
