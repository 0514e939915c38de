/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The recording's Python thread names (THREAD_NAME records): each CPython process whose
 * frames the stack service reads has its threading names read (py_threads.h) while it
 * lives: soon after a thread's first record (again a few times while a new thread has none:
 * threading registers it after its first system calls) and every second (threads renamed
 * meanwhile). A record is written when a thread's name is first read or has changed.
 * Bounded: a few processes per call, each read at most once a second once its threads are
 * named, and never for more than a twentieth of the time (a process with hundreds of
 * threads is read less often): bench/RESULTS.md, "Python thread names".
 */
#ifndef BPFSIGHT_THREAD_NAMES_H
#define BPFSIGHT_THREAD_NAMES_H

#include <sys/types.h>

struct bs_hdr;
struct gil_py;
struct record_ctx;
struct thread_names;

struct thread_names *thread_names__new(void);
void thread_names__free(struct thread_names *tn);
/* PID runs the CPython PY describes (ready, its frames read): its names are read from now. */
void thread_names__add(struct thread_names *tn, pid_t pid, const struct gil_py *py);
/* Every ring record: a thread's first one makes its process due; an exec or an exit forgets. */
void thread_names__observe(struct thread_names *tn, const struct bs_hdr *rec);
/* Often (the recorder's loop): the processes due are read, new or changed names written. */
void thread_names__poll(struct record_ctx *ctx, struct thread_names *tn);

struct py_thread_name;
/* PID's names now, unwritten (`bpfsight stacks`): py_threads__read's answer. */
int thread_names__read(struct thread_names *tn, pid_t pid, struct py_thread_name *out, int max);

#endif /* BPFSIGHT_THREAD_NAMES_H */
