// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A thread's state in words (thread_state.h). */
#include <stdio.h>
#include "records.h"
#include "syscall_names.h"
#include "thread_state.h"

#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_STOPPED	     0x4
#define TASK_TRACED	     0x8

const char *thread_state__text(__u32 state, __s32 syscall, __u32 flags, char *buf, size_t len)
{
	const char *sc = syscall >= 0 ? syscall_name((__u32)syscall) : NULL;
	char scbuf[32];

	if (syscall >= 0 && !sc) {
		snprintf(scbuf, sizeof(scbuf), "syscall_%d", syscall);
		sc = scbuf;
	}
	if (flags & BS_SNAP_EXITING)
		return "exiting";
	if (flags & BS_SNAP_RUNNING)
		return flags & BS_SNAP_IN_KERNEL ? "running (in the kernel)" : "running";
	if (!state)
		return "runnable (waiting for a CPU)";
	if (state & TASK_TRACED)
		return "stopped by a debugger";
	if (state & TASK_STOPPED)
		return "stopped";
	if (flags & BS_SNAP_GIL_WAIT)
		return "waiting for the GIL";
	if (!sc)
		return "sleeping";
	snprintf(buf, len, "%s in %s",
		 state & TASK_UNINTERRUPTIBLE ? "waiting (uninterruptible)" : "sleeping", sc);
	return buf;
}

int thread_state__idle(__u32 state, __u32 flags)
{
	return state && !(flags & (BS_SNAP_RUNNING | BS_SNAP_EXITING | BS_SNAP_GIL_WAIT));
}
