/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Work that may never end, run where it can be left behind. A read of a file on a FUSE file
 * system blocks until its server answers, and a server can choose never to: O_NONBLOCK does
 * not apply to regular files, and a signal interrupts the wait only if it kills. The reads of
 * the files a traced process maps run this way, so that -d and Ctrl-C still stop a recording.
 */
#ifndef BPFSIGHT_ABANDONABLE_H
#define BPFSIGHT_ABANDONABLE_H

/*
 * Run FN(ARG) in a thread of its own (every signal blocked in it), and wait until it returns,
 * GIVE_UP(GIVE_UP_ARG) answers non-zero (asked every 50 ms; NULL: never) or TIMEOUT_MS pass.
 * 0: FN returned, what it made is in ARG. -ETIMEDOUT: it did not (GIVE_UP, or the timeout);
 * the thread is left to finish, then calls DROP(ARG) to free what ARG holds, and the caller
 * must not touch ARG again. With no thread to be had, FN runs in the caller: 0.
 */
int abandonable__run(void (*fn)(void *), void (*drop)(void *), void *arg, unsigned int timeout_ms,
		     int (*give_up)(void *), void *give_up_arg);

/*
 * FN(ARG) in a thread of its own, detached, every signal blocked (the recorder's handlers are
 * the main thread's business): what abandonable__run runs its work in. 0, or a positive error.
 */
int abandonable__thread(void *(*fn)(void *), void *arg);

#endif /* BPFSIGHT_ABANDONABLE_H */
