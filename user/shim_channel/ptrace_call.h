/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Make one thread of a running process call FUNC(ARG_STRING, ARG2) once (dlopen of the
 * cupti-shim, for record --inject), x86-64 only, without staying attached while it runs.
 *
 * A helper child (the tracer; alarm()-bounded, so nothing waits on a stuck target) seizes a
 * thread, interrupts it, and looks where it stopped: a thread inside libc or the loader
 * (which may hold the malloc or loader lock dlopen needs), in a system call that is not a
 * known blocking wait, or in a wait the kernel restarts through its restart block
 * (nanosleep, timed futex: rt_sigreturn clears that block, so the program would see EINTR)
 * is let go untouched and another thread, or the same one a moment later, is tried. On a
 * good one it writes, below the red zone of the thread's stack, the string and a signal
 * frame holding the thread's registers, FPU/AVX state (XSAVE) and signal mask as they were,
 * with a system call that was interrupted already rewound to be made again (what the kernel
 * would do when no handler runs); it points the thread at FUNC with a return address on a
 * `mov $15,%rax; syscall` of libc (glibc's __restore_rt), blocks every signal, and detaches.
 * The thread runs FUNC, returns into rt_sigreturn and is back exactly where it was, mask and
 * all, with nobody attached: if bpfsight dies at any moment, the target is either untouched
 * or already on its way back.
 */
#ifndef BPFSIGHT_PTRACE_CALL_H
#define BPFSIGHT_PTRACE_CALL_H

#include <linux/types.h>
#include <sys/types.h>

#define PTRACE_CALL_MAX_UNSAFE 8

struct ptrace_call {
	pid_t pid;
	__u64 func;	 /* address of the function in the target */
	__u64 restorer;	 /* address of `mov $15,%rax; syscall` in the target */
	const char *arg; /* first argument: copied onto the thread's stack */
	__u64 arg2;	 /* second argument */
	int timeout_s;	 /* the helper's whole life (seize to detach), at least 1 */
	pid_t only_tid;	 /* try this thread alone (tests); 0: every thread, best first */
	__u32 nunsafe;	 /* code where a thread is never borrowed (libc, ld.so) */
	__u64 unsafe[PTRACE_CALL_MAX_UNSAFE][2]; /* [start, end) */
};

struct ptrace_call_result {
	pid_t tid;	  /* the thread that made the call */
	__u32 tries;	  /* threads stopped (and let go) to find it, itself included */
	__u64 stopped_ns; /* from its interrupt to its detach: how long it was held */
	__u64 held_ns;	  /* every stop of every try, added up */
};

/*
 * 0 when the call is on its way (the thread is running FUNC now), or -errno with a sentence
 * in MSG (EPERM: ptrace refused; ESRCH: the process is gone; EAGAIN: no thread at a safe
 * point within the time; ETIMEDOUT; ENOTSUP: not x86-64).
 */
int ptrace_call__run(const struct ptrace_call *c, struct ptrace_call_result *r, char *msg,
		     size_t len);

/* Where `mov $15,%rax; syscall` is in the LEN bytes at BUF: its offset, or -1. */
long ptrace_call__find_restorer(const unsigned char *buf, size_t len);

#endif /* BPFSIGHT_PTRACE_CALL_H */
