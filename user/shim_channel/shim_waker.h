/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Waking a cupti-shim whose poller sleeps between recordings (bpf/shim_records.h,
 * BS_SHIM_WAKE_NAME): called once a recording's probes are attached in the process, so the
 * shim reads its semaphores now rather than never.
 */
#ifndef BPFSIGHT_SHIM_WAKER_H
#define BPFSIGHT_SHIM_WAKER_H

#include <sys/types.h>

/* 1: PID's shim was woken; 0: PID has no wake page (an older shim, or it never slept); -errno. */
int shim_waker__wake(pid_t pid);

#endif /* BPFSIGHT_SHIM_WAKER_H */
