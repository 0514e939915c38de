/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which files get an unwind table, and when (docs/STACKS.md, "Unwind tables"): the stack
 * service's policy over unwind_load.h. A table is built for a file when a stack of a process
 * is cut in code without frame pointers: the files of that stack's frames get one (the file
 * that broke the chain among them), and from then on every mapping of a file with a table
 * in that process is registered for the BPF walk, at once and after each exec or new code.
 * The stacks taken before the table is loaded are cut as before: a recording builds tables in
 * a thread of their own, its loop going on meanwhile. `bpfsight stacks` builds them at once
 * and reads its threads again after the tables their cut stacks wanted are loaded.
 */
#ifndef BPFSIGHT_STACK_UNWIND_H
#define BPFSIGHT_STACK_UNWIND_H

#include <linux/types.h>
#include <sys/types.h>

struct stack_unwind;
struct uprobe_mgr;
struct unwind_load;
struct unwind_load_usage;
struct bs_hdr;

/*
 * Over the maps ROWS_FD and PROCS_FD, with MGR's view of the processes' mappings; ASYNC:
 * tables built in a thread of their own, loaded by stack_unwind__poll (unwind_load.h).
 */
struct stack_unwind *stack_unwind__new(struct uprobe_mgr *mgr, int rows_fd, int procs_fd, int async,
				       int *err);
/* The tables built since: loaded, their processes' mappings registered. */
void stack_unwind__poll(struct stack_unwind *s);
void stack_unwind__free(struct stack_unwind *s);
/* A stack of PID (return addresses W[1..N), instruction W[0]) ended cut: its files' tables. */
void stack_unwind__cut(struct stack_unwind *s, pid_t pid, const __u64 *w, __u32 n);
/* Every executable mapping of PID of a file with a table (and its vDSO): registered. */
void stack_unwind__process(struct stack_unwind *s, pid_t pid);
/* An exec or exit forgets a process's mappings; new code registers them again. */
void stack_unwind__observe(struct stack_unwind *s, const struct bs_hdr *rec);
/* The loaded tables, for a walk in user space (snap.c). */
struct unwind_load *stack_unwind__load(struct stack_unwind *s);
void stack_unwind__usage(const struct stack_unwind *s, struct unwind_load_usage *out);

#endif /* BPFSIGHT_STACK_UNWIND_H */
