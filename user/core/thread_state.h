/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's state as people read it ("running", "sleeping in read", "waiting for the GIL"):
 * what `bpfsight stacks` prints and what the hang trigger's snapshot says (snap_records.h), in
 * the same words everywhere.
 */
#ifndef BPFSIGHT_THREAD_STATE_H
#define BPFSIGHT_THREAD_STATE_H

#include <stddef.h>
#include <linux/types.h>

/*
 * STATE: task->__state (0 running or runnable); SYSCALL: the system call it sleeps in (-1 none);
 * FLAGS: BS_SNAP_* (running, holds or waits for the GIL, exiting). Into BUF, or a constant.
 */
const char *thread_state__text(__u32 state, __s32 syscall, __u32 flags, char *buf, size_t len);
/* Neither running, nor runnable, nor waiting for the GIL (which it would run with). */
int thread_state__idle(__u32 state, __u32 flags);

#endif /* BPFSIGHT_THREAD_STATE_H */
