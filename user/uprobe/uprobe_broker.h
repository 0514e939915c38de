/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Perf-event uprobes without CAP_SYS_ADMIN in the recorder. The kernel creates a uprobe
 * through perf_event_open only for CAP_SYS_ADMIN (perf_uprobe_event_init; CAP_PERFMON
 * sufficed from 5.8 until ba677dbe77af, "perf: Revert to requiring CAP_SYS_ADMIN for
 * uprobes", 6.16 and the stable kernels since July 2025: a uprobe in the middle of an
 * instruction corrupts the process), while uprobe_multi links need only CAP_BPF and
 * CAP_PERFMON. The recorder attaches perf-event uprobes once live (one per site on a kernel
 * without uprobe_multi links, and CPython's code-object free, per process), so before it drops
 * CAP_SYS_ADMIN it forks a broker that keeps it and does one thing: open a uprobe perf event
 * for a path and offset, and pass its descriptor back over a socket (SCM_RIGHTS). The broker
 * keeps CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and CAP_CHECKPOINT_RESTORE (the
 * kernel resolves /proc/PID/map_files paths with its credentials), holds no other descriptor,
 * and runs under a seccomp filter that allows recvmsg, sendmsg, perf_event_open, close and
 * exit: a recorder taken over gets uprobes from it (what uprobe_multi links give CAP_PERFMON
 * anyway), nothing else of CAP_SYS_ADMIN.
 */
#ifndef BPFSIGHT_UPROBE_BROKER_H
#define BPFSIGHT_UPROBE_BROKER_H

#include <sys/types.h>
#include <bpf/libbpf.h>

/*
 * Fork the broker. Call while the process holds CAP_SYS_ADMIN and before any thread starts
 * (privileges__drop does). It ends when the recorder does (its socket closes; and
 * PR_SET_PDEATHSIG). Once per process. 0, or a negative errno (then uprobes are opened by
 * the recorder itself, as before).
 */
int uprobe_broker__start(void);

/*
 * bpf_program__attach_uprobe_opts(PROG, PID, PATH, OFF, O) (O's retprobe, ref_ctr_offset and
 * bpf_cookie; PATH absolute), with the perf event opened by the broker when it runs. A link,
 * or NULL with errno set.
 */
struct bpf_link *uprobe_broker__attach(const struct bpf_program *prog, pid_t pid, const char *path,
				       size_t off, const struct bpf_uprobe_opts *o);

/*
 * The recorder's side of the protocol: one answer read from SOCK, the descriptor it carries,
 * or a negative errno: -EPROTO for an answer that is not one (short, an error with a
 * descriptor, success without one), the read's own error when it failed. Every descriptor
 * the answer carried and does not return is closed, and none it did not carry: a broker that
 * died or misbehaves never makes the recorder close one of its own files.
 */
int uprobe_broker__reply(int sock);

#endif /* BPFSIGHT_UPROBE_BROKER_H */
