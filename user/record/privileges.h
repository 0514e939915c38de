/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Least privilege: once its output is open (and launch mode's CMD forked, keeping what it
 * had), the recorder keeps only the capabilities recording needs, while it parses what the
 * traced processes control (ELF files, USDT notes, shim batches) and serves HTTP.
 */
#ifndef BPFSIGHT_PRIVILEGES_H
#define BPFSIGHT_PRIVILEGES_H

#include <linux/types.h>

/*
 * Keep CAP_BPF, CAP_PERFMON (CAP_SYS_ADMIN too on a kernel without them, before 5.8;
 * elsewhere it goes once KEEPER, called now, returns 0: it forked what keeps it for the work
 * that needs it later, the uprobe broker (uprobe_broker__start); KEEPER NULL or failing, it
 * stays), CAP_SYS_PTRACE (other processes' memory and /proc, stacks, --inject),
 * CAP_DAC_READ_SEARCH (the files they map), CAP_CHECKPOINT_RESTORE (/proc/PID/map_files),
 * CAP_SYS_RESOURCE (locked memory for BPF maps before 5.11), CAP_SYS_NICE (the ring's reader
 * and the stop run at a higher priority,
 * --start-at's wait at a real-time one), and CAP_DAC_OVERRIDE when WRITES_LATER (files made
 * after this in a directory that may be another user's: flight-recorder dumps, --inject's
 * shim): of those the process has, the others are dropped from its permitted, effective,
 * inheritable, ambient and bounding sets, and no_new_privs is set, so no exec (of a root
 * binary, of a setuid one) gives any back. Every thread created after inherits it: call it
 * before any thread starts. Once per process (later calls do nothing). 0, or a negative
 * errno.
 */
int privileges__drop(int writes_later, int (*keeper)(void));

/* 1 when the process may trace: root's CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON (effective). */
int privileges__can_trace(void);

/*
 * Keep only KEEP (a mask of 1 << CAP_*) of the capabilities the process has, in every set
 * (the others leave the bounding set too), and set no_new_privs. 0, or a negative errno.
 */
int privileges__limit(__u64 keep);

/*
 * Once every family is attached: a seccomp filter on every thread (threads and processes
 * made later inherit it) that denies, with EPERM, what recording never does from then on:
 * exec, loading a BPF program, mounts and namespaces, files by handle, modules, kexec, the
 * clock, keys; ptrace unless INJECTS (--inject); process_vm_writev unless INJECTS or WRITES
 * (a family that writes into its targets: pyfunc's spec). It needs
 * privileges__drop's no_new_privs. *CHECK says how one denied call answered, for --verbose.
 * 0, or a negative errno.
 */
int privileges__confine(int injects, int writes, const char **check);

#endif /* BPFSIGHT_PRIVILEGES_H */
