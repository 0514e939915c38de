/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * -a's --exclude-pid and --exclude-comm at the start: the processes living now that they name
 * (a pid, a process whose name is one) and their descendants go into the excluded set
 * (common.bpf.h); BPF adds those forked or exec'd from then on (bpf/exclude.bpf.h). Their
 * events are not recorded, and the uprobe manager places no probe in them (uprobe_group.c):
 * a program under Valgrind or QEMU beside `-a` runs as without it.
 */
#ifndef BPFSIGHT_EXCLUDE_H
#define BPFSIGHT_EXCLUDE_H

struct record_ctx;

/*
 * The processes CTX's options leave out, now, into its excluded map (nothing when it excludes
 * none). Called before the families attach and again once they are, for the children forked
 * between the first look and BPF's taking over. 0 or a negative errno.
 */
int exclude__fill(struct record_ctx *ctx);

#endif /* BPFSIGHT_EXCLUDE_H */
