/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's Python frames read from user space, as bpf/stack_python.bpf.h reads them in
 * BPF (the same bs_py_cfg, the same bs_py_frame words, named by py_stack__name after): for a
 * thread that is not running, whose frames BPF cannot read because BPF reads the memory of
 * the thread it runs in (`bpfsight stacks`, user/stacks/snap.c). Never stops the process: a
 * thread that runs meanwhile may leave a torn walk, which the caller detects (its context
 * switches moved) and reads again.
 */
#ifndef BPFSIGHT_PY_WALK_H
#define BPFSIGHT_PY_WALK_H

#include <sys/types.h>
#include <linux/types.h>
#include "records.h"

struct py_mem;

/*
 * What names a thread in its thread state: its tid, or (3.8-3.10, C->pthread_tid_off set)
 * its TLS base, the pthread_t that thread_id holds (bpf/stack_python.bpf.h's stack_self_key).
 */
static inline __u64 py_walk__key(const struct bs_py_cfg *c, __u32 tid, __u64 fsbase)
{
	return c->pthread_tid_off ? fsbase : tid;
}

/*
 * The innermost MAX Python frames of the thread whose key is KEY in process PID (layout C)
 * into OUT; how many (0: it has no frame), -ENOENT when no thread state names it, another
 * negative errno when PID's memory cannot be read.
 */
int py_walk__frames(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c, __u64 key,
		    struct bs_py_frame *out, int max);
/* The key of the thread holding the GIL now, 0 when none does (or it cannot be read). */
__u64 py_walk__gil_holder(struct py_mem *m, pid_t pid, const struct bs_py_cfg *c);

#endif /* BPFSIGHT_PY_WALK_H */
