/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight stacks` (a one-shot dump of a process's threads, user/stacks/snap.c) and the hang
 * trigger's snapshot: what bpf/snap.bpf.c's task iterator says of each thread of the process.
 * Never on disk (THREAD_SNAP, records.h, is what a recording keeps of it).
 */
#ifndef BPFSIGHT_SNAP_TASK_H
#define BPFSIGHT_SNAP_TASK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct snap_task {
	__u32 tid;
	__u32 state;   /* task->__state: 0 runnable, else TASK_* bits (1 sleeping, 2 disk...) */
	__u32 on_cpu;  /* running on a CPU now: its saved registers are not its current ones */
	__u32 exiting; /* PF_EXITING, or an exit_state (a zombie thread) */
	__s64 syscall; /* the system call it entered the kernel with (task_regs.bpf.h), -1 none */
	__u64 arg0;    /* its first argument (a futex's address: the GIL's, a lock's) */
	__u32 kthread; /* a kernel thread: no user space */
	/* Asleep with a queue stamp (sched_info.last_queued): its schedstat will count part of
	 * the sleep as a wait for a CPU at its next switch-in (BS_SNAP_CLOCK_STALE). */
	__u32 queue_stale;
	/* The user registers saved where it entered the kernel (valid unless on_cpu) */
	__u64 ip, sp, bp;
	__u64 fsbase;	    /* its TLS: glibc's struct pthread, a 3.8-3.10 thread state's key */
	__u64 switches;	    /* nvcsw + nivcsw: it ran in between when this moved */
	__u64 start_time;   /* CLOCK_MONOTONIC ns: a reused tid is another thread */
	__u64 cpu_ns;	    /* CPU time so far (se.sum_exec_runtime) */
	__u64 off_cpu_ns;   /* how long since it last ran (0: on a CPU now) */
	__u64 run_delay_ns; /* its time ready to run without a CPU so far (sched_info.run_delay) */
	char comm[16];
};

#endif /* BPFSIGHT_SNAP_TASK_H */
