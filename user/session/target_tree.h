/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -p PID takes in PID's child processes that exist already (a PyTorch job's DataLoader
 * workers, started before the attach), and theirs, as BPF takes in the children forked while
 * recording (bpf/proc.bpf.c): record, monitor, top and stacks alike, unless
 * --no-subprocesses (py-spy's --subprocesses is accepted, and is the default here).
 */
#ifndef BPFSIGHT_TARGET_TREE_H
#define BPFSIGHT_TARGET_TREE_H

#include <sys/types.h>
#include <linux/types.h>

struct record_opts;

/*
 * The processes living now below ROOTS (NROOTS pids), each once, parents before children,
 * into OUT (at most MAX; none of ROOTS). Returns how many there are, which may be more than
 * MAX (only MAX written), or a negative errno when /proc cannot be read.
 */
int target_tree__descendants(const pid_t *roots, __u32 nroots, pid_t *out, __u32 max);

/*
 * O's -p targets' descendants added to its targets (o->pids, their start times), at most up
 * to RECORD_MAX_PIDS (more are said on stderr, never silently left out). Returns how many
 * were added (o->nchildren too).
 */
int target_tree__take_children(struct record_opts *o);

#endif /* BPFSIGHT_TARGET_TREE_H */
