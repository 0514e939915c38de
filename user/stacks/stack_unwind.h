/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which files get an unwind table, and when (docs/STACKS.md, "When a file gets its table"):
 * the stack service's policy over unwind_load.h. In a recording every file a traced process
 * maps executable gets one before a stack can need it: the processes' files when the
 * recording starts (-p: the recording goes live once they are loaded; -a: as they come), a
 * new program's and its libraries when they are mapped (exec, dlopen: launch mode holds the
 * process at those stops until they are loaded), each read from the store of earlier recordings
 * (unwind_store.h) or built in a thread of their own; a forked child has its parent's.
 * A stack cut in a file that was never tried (a process missed) has its process looked at
 * again. `bpfsight stacks` builds tables only for the files its cut stacks name, at once, and
 * reads its threads again with them.
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
 * How long a launched process is held at new code for its tables, and how long -p's start
 * waits for its targets' (a running job is not held then: the recording goes live later). A
 * build that does not end is left behind sooner or later anyway (BPFSIGHT_UNWIND_WAIT_S).
 */
#define STACK_UNWIND_HOLD_NS  (10 * 1000000000ull)
#define STACK_UNWIND_START_NS (30 * 1000000000ull)

/*
 * Over the maps ROWS_FD and PROCS_FD, with MGR's view of the processes' mappings; ASYNC:
 * tables built in a thread of their own, loaded by stack_unwind__poll (unwind_load.h).
 */
struct stack_unwind *stack_unwind__new(struct uprobe_mgr *mgr, int rows_fd, int procs_fd, int async,
				       int *err);
/* The tables built since: loaded, their processes' mappings registered. */
void stack_unwind__poll(struct stack_unwind *s);
void stack_unwind__free(struct stack_unwind *s);
/*
 * A stack of PID (return addresses W[1..N), instruction W[0]) ended cut: its files' tables
 * (EAGER: the process looked at again when a file among them was never tried; else those
 * files alone, `bpfsight stacks`).
 */
void stack_unwind__cut(struct stack_unwind *s, pid_t pid, const __u64 *w, __u32 n, int eager);
/*
 * Every executable file mapping of PID (and its vDSO): its file's table wanted, the mapping
 * registered once it is loaded.
 */
void stack_unwind__process(struct stack_unwind *s, pid_t pid);
/*
 * Until PID's tables (PID 0: every process's) are loaded and registered, or DEADLINE
 * (mono_clock.h); how many mappings still wait.
 */
size_t stack_unwind__hold(struct stack_unwind *s, pid_t pid, __u64 deadline);
/*
 * A process's life and new code: an exec forgets its mappings and registers the new
 * program's, new code (a dlopen) registers its files', a fork gives the child its parent's,
 * an exit forgets them.
 */
void stack_unwind__observe(struct stack_unwind *s, const struct bs_hdr *rec);
/* The loaded tables, for a walk in user space (snap.c). */
struct unwind_load *stack_unwind__load(struct stack_unwind *s);
void stack_unwind__usage(const struct stack_unwind *s, struct unwind_load_usage *out);

#endif /* BPFSIGHT_STACK_UNWIND_H */
