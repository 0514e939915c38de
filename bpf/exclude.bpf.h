/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -a's excluded processes (common.bpf.h's `excluded`) as they fork and exec: a child of an
 * excluded process is excluded before it first runs; a process whose exec gives it a name
 * --exclude-comm lists is excluded from that exec on (with the children it has from then).
 * Included by proc.bpf.c, which keeps the set, and libmap.bpf.c, which must know at the same
 * exec whether to hold the process until its probes are out (whichever runs first marks it).
 */
#ifndef BPFSIGHT_EXCLUDE_BPF_H
#define BPFSIGHT_EXCLUDE_BPF_H

#include "common.bpf.h"

/* --exclude-comm's names, NUL-padded to BS_COMM_LEN; set by user space before load. */
const volatile char exclude_comms[BS_EXCLUDE_COMMS][BS_COMM_LEN];
const volatile __u32 nexclude_comms = 0;

static __always_inline bool bs_excluded(__u32 tgid)
{
	return have_excluded && bpf_map_lookup_elem(&excluded, &tgid);
}

static __always_inline bool comm_is(const char *comm, __u32 i)
{
	for (int c = 0; c < BS_COMM_LEN; c++) {
		if (comm[c] != exclude_comms[i][c])
			return false;
		if (!comm[c])
			break;
	}
	return true;
}

/* The current process just exec'd (its new name set): excluded now? Marks it so. */
static __always_inline bool bs_exclude_at_exec(__u32 tgid)
{
	char comm[BS_COMM_LEN] = {};
	__u8 one = 1;

	if (!have_excluded)
		return false;
	if (bs_excluded(tgid))
		return true;
	bpf_get_current_comm(comm, sizeof(comm));
	for (__u32 i = 0; i < BS_EXCLUDE_COMMS && i < nexclude_comms; i++)
		if (comm_is(comm, i)) {
			if (bpf_map_update_elem(&excluded, &tgid, &one, BPF_ANY))
				bs_count_loss(BS_LOSS_TARGET_MAP);
			return true;
		}
	return false;
}

/* A new process (CPID) of an excluded parent (PPID) is excluded before it first runs. */
static __always_inline void bs_exclude_at_fork(__u32 ppid, __u32 cpid)
{
	__u8 one = 1;

	if (bs_excluded(ppid) && bpf_map_update_elem(&excluded, &cpid, &one, BPF_ANY))
		bs_count_loss(BS_LOSS_TARGET_MAP);
}

#endif /* BPFSIGHT_EXCLUDE_BPF_H */
