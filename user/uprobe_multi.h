/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * uprobe_multi links (Linux 6.6+): many offsets of one file on one program in one link.
 * Why it matters here: each perf-event uprobe unregisters with its own RCU-tasks-trace and
 * SRCU grace periods (~0.5 s each on this kernel), so detaching a few hundred of them takes
 * minutes; a multi link pays that once. libbpf 1.1 (Debian 12) has no API for it, so the
 * link is created with the raw bpf(2) command.
 */
#ifndef BPFSIGHT_UPROBE_MULTI_H
#define BPFSIGHT_UPROBE_MULTI_H

#include <linux/types.h>

struct bpf_program;

/* 1 when the running kernel has uprobe_multi links. */
int uprobe_multi__supported(void);
/* Make PROG attachable with uprobe_multi__attach (before its object is loaded). */
int uprobe_multi__prepare(struct bpf_program *prog);
/*
 * Attach PROG (prepared) at CNT file OFFSETS of PATH, for every process, with COOKIES
 * (may be NULL); RETPROBE for a return probe. Returns the link fd (close() detaches) or a
 * negative errno.
 */
int uprobe_multi__attach(const struct bpf_program *prog, const char *path,
			 const __u64 *offsets, const __u64 *cookies, __u32 cnt, int retprobe);

#endif /* BPFSIGHT_UPROBE_MULTI_H */
