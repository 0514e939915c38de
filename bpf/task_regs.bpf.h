/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A task's user registers as bpf_task_pt_regs hands them (saved where it entered the kernel),
 * read by what they are rather than by x86-64's field names, so that a program reads the same
 * registers on every architecture it is built for (__TARGET_ARCH_*, the Makefile's ARCH): the
 * instruction, stack and frame pointers and a system call's first argument through libbpf's
 * PT_REGS_* (bpf_tracing.h); the system call the task entered the kernel with, which
 * bpf_tracing.h does not name, from the field each architecture keeps it in (-1 when the entry
 * was no system call: a page fault, an interrupt).
 */
#ifndef BPFSIGHT_TASK_REGS_BPF_H
#define BPFSIGHT_TASK_REGS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#if defined(bpf_target_x86)
#define BS_PT_SYSCALL_NR orig_ax
#elif defined(bpf_target_arm64)
#define BS_PT_SYSCALL_NR syscallno /* an s32: -1 stays -1 */
#else
#error "task_regs.bpf.h: the system call number's register is named for x86-64 and arm64 only"
#endif

/* The system call number, by a direct load: a trusted pointer (a tp_btf program's task). */
#define BS_REGS_SYSCALL(r) ((long)(r)->BS_PT_SYSCALL_NR)
/* The same through bpf_probe_read_kernel, as PT_REGS_*_CORE read (an iterator's task). */
#define BS_REGS_SYSCALL_CORE(r) ((long)BPF_CORE_READ((r), BS_PT_SYSCALL_NR))

#endif /* BPFSIGHT_TASK_REGS_BPF_H */
