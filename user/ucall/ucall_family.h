/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the record sides of the uprobe families (cuda, nccl, cublas, cudnn, blas) share. */
#ifndef BPFSIGHT_UCALL_FAMILY_H
#define BPFSIGHT_UCALL_FAMILY_H

#include "ucall_api.h"

struct bpf_link;
struct bpf_object;
struct bpf_program;
struct record_ctx;

/*
 * Load OBJ (opened, its common rodata set) on the shared maps and hand its generic programs
 * to the recording's uprobe manager for every function of TABLE. The programs are attached
 * per function by the manager, never by the skeleton. EXIT (ucall_exit_btf, which frees a
 * thread's slot when it exits) is attached here, before any uprobe, into *EXIT_LINK (the
 * skeleton's, which destroys it).
 */
int ucall_family__load(struct record_ctx *ctx, const struct ucall_table *table,
		       struct bpf_object *obj, struct bpf_program *entry, struct bpf_program *ret,
		       struct bpf_program *exit, struct bpf_link **exit_link);

#endif /* BPFSIGHT_UCALL_FAMILY_H */
