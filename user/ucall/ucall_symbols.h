/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * SYMBOL records of a uprobe family, written once per (pid, address) right before the first
 * record that needs them: the names of kernel host stubs (from the process's ELF files) and
 * of driver handles (from the calls that created them).
 */
#ifndef BPFSIGHT_UCALL_SYMBOLS_H
#define BPFSIGHT_UCALL_SYMBOLS_H

#include <linux/types.h>

struct record_ctx;
struct ucall_symbols;
struct uprobe_mgr;

/* Host addresses are named from MGR's files (NULL: never). */
struct ucall_symbols *ucall_symbols__new(struct uprobe_mgr *mgr);
void ucall_symbols__free(struct ucall_symbols *s);
/* Name ADDR in PID as NAME (BS_SYM_*), writing the record unless already written so. */
void ucall_symbols__set(struct ucall_symbols *s, struct record_ctx *ctx, __u32 pid, __u64 addr,
			const char *name, __u32 kind);
/* The name given to ADDR in PID so far, or NULL. */
const char *ucall_symbols__get(struct ucall_symbols *s, __u32 pid, __u64 addr);
/* PID exited: its names go (a process given the pid again names its own). */
void ucall_symbols__proc_exit(struct ucall_symbols *s, __u32 pid);
/* Name host address ADDR of PID from its ELF files (once); returns the name or NULL. */
const char *ucall_symbols__host(struct ucall_symbols *s, struct record_ctx *ctx, __u32 pid,
				__u64 addr);

#endif /* BPFSIGHT_UCALL_SYMBOLS_H */
