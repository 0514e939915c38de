/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names Python gave its threads (threading.Thread's name: "MainThread", "cpu-0",
 * "ThreadPoolExecutor-0_1"), read from a live CPython's memory as py-spy does, never
 * stopping it: sys.modules -> threading -> _active (ident -> Thread), and each Thread's
 * _name and _native_id (the thread's tid) from its instance attributes, whatever the
 * version keeps them in (3.8-3.10 a dict, 3.11+ the values of the class's shared keys, 3.13+
 * inline in the object). CPython 3.8 on, stripped or not. Threads that threading did
 * not start (a C library's thread that called threading.current_thread(): "Dummy-N") are
 * left out: their OS name (comm) says more. For the recording (user/python/thread_names.c),
 * `bpfsight stacks` and `bpfsight top`.
 */
#ifndef BPFSIGHT_PY_THREADS_H
#define BPFSIGHT_PY_THREADS_H

#include <sys/types.h>
#include <linux/types.h>

#define PY_THREAD_NAME_MAX 128 /* bytes of a name kept, its NUL included */

struct gil_py; /* gil_python.h */
struct py_threads;

struct py_thread_name {
	__u32 tid;
	char name[PY_THREAD_NAME_MAX];
};

struct py_threads *py_threads__new(void);
void py_threads__free(struct py_threads *t);
/*
 * PID runs the CPython PY describes (gil_python__inspect: initialised, its main
 * interpreter known): its names can be read from now on. 0, or -ENOTSUP (a version or
 * build whose layout is not known: 3.13t's free-threaded objects).
 */
int py_threads__add(struct py_threads *t, pid_t pid, const struct gil_py *py);
/*
 * The names of PID's Python threads now: up to MAX into OUT; how many (0 while threading is
 * not imported), -ENOENT when PID was not added, -ESRCH when it is gone. Cost: about ten
 * reads of its memory per thread (bench/RESULTS.md, "Python thread names").
 */
int py_threads__read(struct py_threads *t, pid_t pid, struct py_thread_name *out, int max);
/* PID exec'd or exited. */
void py_threads__forget(struct py_threads *t, pid_t pid);

#endif /* BPFSIGHT_PY_THREADS_H */
