/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which name a thread is shown by when it has two: the one Python's threading gave it and
 * its OS name (comm). Python's, unless threading made it up ("MainThread", "Thread-3 (run)",
 * "Dummy-1") and the program gave the thread an OS name of its own (prctl,
 * pthread_setname_np: "trainer" over "MainThread", torch's "pt_autograd_0" over "Dummy-1").
 * The trace model (every reader) and `bpfsight stacks` pick alike.
 */
#ifndef BPFSIGHT_THREAD_NAME_H
#define BPFSIGHT_THREAD_NAME_H

/* 1 when threading made NAME up: "MainThread", "Thread-N", "Thread-N (target)", "Dummy-N". */
int thread_name__made_up(const char *name);
/*
 * The name shown for a thread named PY by Python (NULL: none) and COMM by the OS, in the
 * process started as CMDLINE (its argv[0] first, or NULL) from EXE (or NULL): COMM is the
 * thread's own when it is neither file name as comm keeps it (15 bytes).
 */
const char *thread_name__pick(const char *py, const char *comm, const char *cmdline,
			      const char *exe);

#endif /* BPFSIGHT_THREAD_NAME_H */
