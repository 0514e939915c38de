/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cpu family's records (block 0x80): timer samples of traced threads (perf_event),
 * bpf/cpu.bpf.c writes them, user/families/cpu/ reads them. Their stacks: stack_records.h.
 */
#ifndef BPFSIGHT_CPU_RECORDS_H
#define BPFSIGHT_CPU_RECORDS_H

#include "records.h"

#define BS_REC_CPU_SAMPLE_RAW 0x80 /* ring only: a sample and its raw user stack (never on disk) */
#define BS_REC_CPU_SAMPLE     0x81 /* one on-CPU sample of a thread */

struct bs_cpu_sample_raw {
	struct bs_hdr h;
	__u32 nips;  /* user-space return addresses that follow, innermost first */
	__u32 flags; /* BS_CPU_* */
	__u32 npy;   /* Python frames after the addresses (struct bs_py_frame), innermost first */
	__u32 _pad;
	/* __u64 ips[nips]; struct bs_py_frame py[npy]; */
};

struct bs_cpu_sample {
	struct bs_hdr h;
	__u32 stack_id; /* bs_stack id, 0 = no user stack (a kernel thread, or none could be read) */
	__u32 flags;	/* BS_CPU_* */
};

/* The sample hit kernel code: its stack is where user space entered the kernel. */
#define BS_CPU_KERNEL 0x1
/*
 * With BS_CPU_KERNEL: that kernel code ran for a page fault (its kernel stack passed through the
 * fault handler). Recorders before it never set it; nor does one that found no handler in
 * /proc/kallsyms (it says so when it records).
 */
#define BS_CPU_FAULT 0x20
/*
 * With BS_CPU_KERNEL and not BS_CPU_FAULT: the system call the thread was in, plus one, in the
 * flags' upper half (0: none, or a recorder before it); BS_CPU_SYSCALL_NR reads it, -1 none.
 */
#define BS_CPU_SYSCALL_SHIFT	 16
#define BS_CPU_SYSCALL_NR(flags) ((int)((flags) >> BS_CPU_SYSCALL_SHIFT) - 1)

BS_ASSERT_RECORD(bs_cpu_sample_raw, 40);
BS_ASSERT_RECORD(bs_cpu_sample, 32);

#endif /* BPFSIGHT_CPU_RECORDS_H */
