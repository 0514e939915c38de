// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One function call in another process's thread, returning by rt_sigreturn (ptrace_call.h). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "mono_clock.h"
#include "ptrace_call.h"

#define MAX_THREADS    64
#define XSTATE_MAX     (64 << 10) /* AMX makes it ~11 KiB today */
#define STACK_ROOM     (32 << 10) /* what dlopen and a constructor need below the frame */
#define RED_ZONE       128
#define ROUND_PAUSE_NS 5000000 /* between two passes over the threads */

/* Kernel return values of an interrupted system call (include/linux/errno.h). */
#define ERESTARTSYS	      512
#define ERESTARTNOINTR	      513
#define ERESTARTNOHAND	      514
#define ERESTART_RESTARTBLOCK 516

#ifndef FP_XSTATE_MAGIC1 /* asm/sigcontext.h, through sys/user.h on some systems */
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u
#endif
#define UC_FP_XSTATE	     0x1
#define UC_SIGCONTEXT_SS     0x2
#define UC_STRICT_RESTORE_SS 0x4

/* The x86-64 signal frame rt_sigreturn reads (arch/x86/include/asm/sigframe.h). */
struct k_sigcontext {
	__u64 r8, r9, r10, r11, r12, r13, r14, r15;
	__u64 di, si, bp, bx, dx, ax, cx, sp, ip, flags;
	__u16 cs, gs, fs, ss;
	__u64 err, trapno, oldmask, cr2, fpstate;
	__u64 reserved1[8];
};
_Static_assert(sizeof(struct k_sigcontext) == 256, "struct sigcontext_64");

struct k_rt_frame {
	__u64 pretcode; /* the return address FUNC returns through */
	__u64 uc_flags, uc_link;
	struct {
		__u64 sp;
		__s32 flags;
		__u32 _pad;
		__u64 size;
	} uc_stack;
	struct k_sigcontext mc;
	__u64 uc_sigmask;
	__u8 info[128]; /* siginfo: unused by rt_sigreturn */
};

/* What the helper child reports through its pipe. */
struct outcome {
	int err;  /* 0 or -errno */
	int what; /* OUT_* */
	int sys_errno;
	struct ptrace_call_result r;
};

enum { OUT_OK, OUT_SEIZE, OUT_GONE, OUT_NO_SAFE, OUT_NO_XSAVE, OUT_WRITE, OUT_REGS, OUT_CHANGED };

/* System calls a thread waits in without holding a lock dlopen could need. */
static int waiting_syscall(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_readv:
	case SYS_writev:
	case SYS_poll:
	case SYS_select:
	case SYS_sched_yield:
	case SYS_pause:
	case SYS_nanosleep:
	case SYS_accept:
	case SYS_connect:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_wait4:
	case SYS_msgrcv:
	case SYS_rt_sigtimedwait:
	case SYS_rt_sigsuspend:
	case SYS_futex:
	case SYS_io_getevents:
	case SYS_semtimedop:
	case SYS_epoll_wait:
	case SYS_clock_nanosleep:
	case SYS_waitid:
	case SYS_pselect6:
	case SYS_ppoll:
	case SYS_epoll_pwait:
	case SYS_accept4:
	case SYS_recvmmsg:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return 1;
	}
	return 0;
}

long ptrace_call__find_restorer(const unsigned char *buf, size_t len)
{
	static const unsigned char pat[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };

	for (size_t i = 0; i + sizeof(pat) <= len; i++)
		if (buf[i] == pat[0] && !memcmp(buf + i, pat, sizeof(pat)))
			return (long)i;
	return -1;
}

#ifdef __x86_64__

/* ---- the helper child: raw system calls only (it was forked from a threaded process) ---- */

struct helper {
	const struct ptrace_call *c;
	unsigned char func_bytes[16]; /* FUNC's first bytes, read before the helper starts */
	pid_t tids[MAX_THREADS];
	int ntids;
	unsigned char *xstate; /* XSTATE_MAX */
	unsigned char *scratch;
	size_t arg_len;
};

static int in_unsafe_code(const struct ptrace_call *c, __u64 ip)
{
	for (__u32 i = 0; i < c->nunsafe; i++)
		if (ip >= c->unsafe[i][0] && ip < c->unsafe[i][1])
			return 1;
	return 0;
}

/*
 * Where the thread stopped is one to borrow: outside libc and the loader, or in a waiting
 * system call that the kernel restarts by rewinding (not through the restart block, which
 * rt_sigreturn clears: the program would see EINTR).
 */
static int safe_point(const struct ptrace_call *c, const struct user_regs_struct *g)
{
	long ret = (long)g->rax;

	if ((long)g->orig_rax == SYS_restart_syscall) /* a sleep just over (sleep_out) */
		return ret < -ERESTART_RESTARTBLOCK || ret > -ERESTARTSYS;
	if ((long)g->orig_rax >= 0)
		return waiting_syscall((long)g->orig_rax) && ret != -ERESTART_RESTARTBLOCK;
	return !in_unsafe_code(c, g->rip);
}

/* The registers the thread must resume with: an interrupted call rewound to be made again. */
static void resume_regs(const struct user_regs_struct *g, struct k_sigcontext *mc)
{
	__u64 ax = g->rax, ip = g->rip;

	if ((long)g->orig_rax >= 0) {
		switch (-(long)g->rax) {
		case ERESTARTSYS:
		case ERESTARTNOINTR:
		case ERESTARTNOHAND:
			ax = g->orig_rax;
			ip -= 2; /* the syscall instruction */
			break;
		}
	}
	mc->r8 = g->r8, mc->r9 = g->r9, mc->r10 = g->r10, mc->r11 = g->r11;
	mc->r12 = g->r12, mc->r13 = g->r13, mc->r14 = g->r14, mc->r15 = g->r15;
	mc->di = g->rdi, mc->si = g->rsi, mc->bp = g->rbp, mc->bx = g->rbx;
	mc->dx = g->rdx, mc->ax = ax, mc->cx = g->rcx, mc->sp = g->rsp, mc->ip = ip;
	mc->flags = g->eflags;
	mc->cs = (__u16)g->cs, mc->gs = (__u16)g->gs, mc->fs = (__u16)g->fs, mc->ss = (__u16)g->ss;
}

static int wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t w = waitpid(tid, status, __WALL);

		if (w == tid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
	}
}

/* Let TID go as it was (passing on a signal it stopped for). */
static void let_go(pid_t tid, int sig)
{
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
}

/*
 * The code at FUNC and at the restorer is still what the addresses were computed from: the
 * process did not exec another program since (a stopped thread cannot, but another thread
 * may have before it stopped).
 */
static int same_image(const struct helper *h)
{
	static const unsigned char restorer[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	unsigned char now[16 + sizeof(restorer)];
	struct iovec local = { now, sizeof(now) }, remote[2] = {
		{ (void *)h->c->func, 16 },
		{ (void *)h->c->restorer, sizeof(restorer) },
	};

	return process_vm_readv(h->c->pid, &local, 1, remote, 2, 0) == (ssize_t)sizeof(now) &&
	       !memcmp(now, h->func_bytes, 16) && !memcmp(now + 16, restorer, sizeof(restorer));
}

/*
 * TID stopped in a sleep the kernel restarts through its restart block (nanosleep, a timed
 * futex or poll): let it run on, stopping at system calls (PTRACE_SYSCALL), until the call
 * that restarts it returns; then G holds the registers of a thread just back from a
 * completed wait (a safe point). Signals that stop it meanwhile are delivered. The helper's
 * alarm bounds a long sleep (its death lets the thread go). 0, or -1 when TID is gone.
 */
static int sleep_out(pid_t tid, struct user_regs_struct *g)
{
	int status, sig = 0, entered = 0;

	if (ptrace(PTRACE_SETOPTIONS, tid, 0, (void *)PTRACE_O_TRACESYSGOOD))
		return -1;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, tid, 0, (void *)(long)sig) || wait_stop(tid, &status) ||
		    !WIFSTOPPED(status))
			return -1;
		sig = 0;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (!entered++)
				continue; /* the entry of restart_syscall */
			if (ptrace(PTRACE_GETREGS, tid, 0, g))
				return -1;
			entered = 0;
			if ((long)g->rax != -ERESTART_RESTARTBLOCK)
				return 0; /* back from it: the wait is over */
			continue;
		}
		if (!(status >> 16))
			sig = WSTOPSIG(status); /* a signal for the program: deliver it */
	}
}

/* A thread being borrowed: what the steps of try_thread share. */
struct borrow {
	pid_t tid;
	__u64 t0;		   /* since when it is held */
	struct user_regs_struct g; /* its registers where it stopped */
	__u64 mask;		   /* its signal mask */
	__u32 xsize;		   /* bytes of its XSAVE image in h->xstate */
	__u64 arg_at, fr_at;	   /* where ARG and the signal frame are written */
};

/* Let the thread go as it was (passing on SIG): not one to borrow now. */
static int not_now(struct borrow *b, int sig, struct outcome *o)
{
	let_go(b->tid, sig);
	o->r.held_ns += mono_now_ns() - b->t0;
	return 0;
}

/*
 * Seize thread B->tid and stop it, its registers into B->g: 1 when it is held, 0 when it is
 * not to be taken now (let go), <0 to stop trying (OUT in *what). A sleep it is let out of
 * (sleep_out) is not counted as held.
 */
static int take_thread(struct helper *h, struct borrow *b, struct outcome *o)
{
	const struct ptrace_call *c = h->c;
	pid_t tid = b->tid;
	int status, sig;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		if (errno == ESRCH)
			return kill(c->pid, 0) && errno == ESRCH ? (o->what = OUT_GONE, -ESRCH) : 0;
		o->what = OUT_SEIZE;
		o->sys_errno = errno;
		return -errno;
	}
	o->r.tries++;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) || wait_stop(tid, &status)) {
		let_go(tid, 0);
		return 0;
	}
	if (!WIFSTOPPED(status))
		return 0; /* it exited meanwhile */
	sig = WSTOPSIG(status);
	/* A signal on its way, or a group stop: pass it on, as if we were never here. */
	if ((status >> 16) != PTRACE_EVENT_STOP || sig != SIGTRAP)
		return not_now(b, (status >> 16) ? 0 : sig, o);
	if (ptrace(PTRACE_GETREGS, tid, 0, &b->g))
		return not_now(b, 0, o);
	if (!same_image(h)) {
		let_go(tid, 0);
		o->what = OUT_CHANGED;
		return -ESRCH;
	}
	if ((long)b->g.orig_rax >= 0 && (long)b->g.rax == -ERESTART_RESTARTBLOCK &&
	    waiting_syscall((long)b->g.orig_rax)) {
		/* A sleep: let it finish as the kernel restarts it, and take the thread after. */
		o->r.held_ns += mono_now_ns() - b->t0;
		if (sleep_out(tid, &b->g))
			return 0;
		b->t0 = mono_now_ns();
	}
	return 1;
}

/*
 * h->xstate, as ptrace's XSAVE image of B->xsize bytes, made what a signal frame holds:
 * ptrace's image carries XCR0 in the first 8 bytes of sw_reserved (offset 464); a signal
 * frame wants struct _fpx_sw_bytes there, and FP_XSTATE_MAGIC2 after the image, or
 * rt_sigreturn restores only the legacy x87/SSE part.
 */
static void xstate_for_sigreturn(struct helper *h, const struct borrow *b)
{
	__u32 xsize = b->xsize, sw[2];
	__u64 xcr0;

	memcpy(&xcr0, h->xstate + 464, 8);
	memset(h->xstate + 464, 0, 48);
	sw[0] = FP_XSTATE_MAGIC1;
	sw[1] = xsize + 4; /* extended_size: the image and MAGIC2 */
	memcpy(h->xstate + 464, sw, 8);
	memcpy(h->xstate + 472, &xcr0, 8);
	memcpy(h->xstate + 480, &xsize, 4);
	sw[0] = FP_XSTATE_MAGIC2;
	memcpy(h->xstate + xsize, sw, 4);
}

/*
 * Below the thread's red zone: ARG, the XSAVE area (64-aligned) and the signal frame FUNC
 * returns through, which resumes the thread where it stopped. 1 when written; 0 when there
 * is no room for FUNC below them (let go); <0 when the write failed (OUT in *what).
 */
static int write_frame(struct helper *h, struct borrow *b, struct outcome *o)
{
	const struct ptrace_call *c = h->c;
	__u64 top, xs_at, xlen = b->xsize + 4;
	struct iovec local[3], remote[3];
	struct k_rt_frame fr;

	top = b->g.rsp - RED_ZONE;
	b->arg_at = (top - (h->arg_len + 1)) & ~7ull;
	xs_at = (b->arg_at - xlen) & ~63ull;
	b->fr_at = ((xs_at - sizeof(fr)) & ~15ull) - 8; /* at FUNC's entry, rsp + 8 is 16-aligned */
	/*
	 * Room for FUNC below the frame, mapped now: a thread stack has a fixed size, an
	 * alternate signal stack may be small (the main stack grows, but its mapping already
	 * spans more than this below a thread that is not deep in it).
	 */
	local[0] = (struct iovec){ h->scratch, STACK_ROOM };
	remote[0] = (struct iovec){ (void *)(b->fr_at - STACK_ROOM), STACK_ROOM };
	if (process_vm_readv(c->pid, local, 1, remote, 1, 0) != STACK_ROOM)
		return not_now(b, 0, o);

	memset(&fr, 0, sizeof(fr));
	fr.pretcode = c->restorer;
	fr.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	/* An invalid mode: rt_sigreturn's sigaltstack() fails quietly, the thread's is kept. */
	fr.uc_stack.flags = 7;
	resume_regs(&b->g, &fr.mc);
	fr.mc.fpstate = xs_at;
	fr.uc_sigmask = b->mask;

	local[0] = (struct iovec){ (void *)c->arg, h->arg_len + 1 };
	remote[0] = (struct iovec){ (void *)b->arg_at, h->arg_len + 1 };
	local[1] = (struct iovec){ h->xstate, xlen };
	remote[1] = (struct iovec){ (void *)xs_at, xlen };
	local[2] = (struct iovec){ &fr, sizeof(fr) };
	remote[2] = (struct iovec){ (void *)b->fr_at, sizeof(fr) };
	if (process_vm_writev(c->pid, local, 3, remote, 3, 0) !=
	    (ssize_t)(h->arg_len + 1 + xlen + sizeof(fr))) {
		o->sys_errno = errno;
		let_go(b->tid, 0);
		o->what = OUT_WRITE;
		return -EFAULT;
	}
	return 1;
}

/* Send the thread into FUNC(ARG, ARG2) on the frame write_frame made, and let it go. */
static int start_call(struct helper *h, struct borrow *b, struct outcome *o)
{
	const struct ptrace_call *c = h->c;
	struct user_regs_struct n = b->g;
	__u64 all = ~0ull;

	n.rip = c->func;
	n.rsp = b->fr_at;
	n.rdi = b->arg_at;
	n.rsi = c->arg2;
	n.rax = 0;
	n.orig_rax = -1;		    /* no system call to restart on the way out */
	n.eflags &= ~(0x400ull | 0x100ull); /* DF clear (the ABI's), no TF */
	/*
	 * Registers first: from here on the thread is consistent whatever happens to us (it
	 * runs FUNC and rt_sigreturn restores everything); then the mask, so that no handler
	 * of the program runs on the borrowed frame (signals wait until rt_sigreturn).
	 */
	if (ptrace(PTRACE_SETREGS, b->tid, 0, &n)) {
		o->sys_errno = errno;
		let_go(b->tid, 0);
		o->what = OUT_REGS;
		return -EIO;
	}
	ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(all), &all);
	let_go(b->tid, 0);
	o->r.tid = b->tid;
	o->r.stopped_ns = mono_now_ns() - b->t0;
	o->r.held_ns += o->r.stopped_ns;
	return 1;
}

/* 1: the call is on its way; 0: not this thread (now); <0: stop trying (OUT in *what). */
static int try_thread(struct helper *h, pid_t tid, struct outcome *o)
{
	struct borrow b = { .tid = tid, .t0 = mono_now_ns() };
	struct iovec xiov = { h->xstate, XSTATE_MAX };
	int ret = take_thread(h, &b, o);

	if (ret <= 0)
		return ret;
	if (!safe_point(h->c, &b.g) ||
	    ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(b.mask), &b.mask) ||
	    ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &xiov))
		return not_now(&b, 0, o);
	b.xsize = (__u32)xiov.iov_len;
	if (b.xsize < 576 || b.xsize + 4 > XSTATE_MAX) {
		let_go(tid, 0);
		o->what = OUT_NO_XSAVE;
		return -ENOTSUP;
	}
	xstate_for_sigreturn(h, &b);
	ret = write_frame(h, &b, o);
	if (ret <= 0)
		return ret;
	return start_call(h, &b, o);
}

static void helper_main(struct helper *h, int fd)
{
	struct timespec pause = { 0, ROUND_PAUSE_NS };
	struct outcome o;
	sigset_t none;
	int rc = 0;

	memset(&o, 0, sizeof(o));
	/* The deadline: our death detaches whatever we hold, and the kernel resumes it. */
	signal(SIGALRM, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	alarm((unsigned int)(h->c->timeout_s > 0 ? h->c->timeout_s : 1));
	for (;;) {
		for (int i = 0; i < h->ntids && !rc; i++)
			rc = try_thread(h, h->tids[i], &o);
		if (rc)
			break;
		nanosleep(&pause, NULL);
	}
	o.err = rc > 0 ? 0 : rc;
	if (write(fd, &o, sizeof(o)) < 0)
		_exit(2);
	_exit(0);
}

/* ---- the parent ---- */

/* "202 0x..." in a syscall, "-1 ..." blocked elsewhere, "running". */
static long thread_syscall(pid_t pid, pid_t tid)
{
	char fn[64], buf[64];
	long nr = -2;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(fn, "re");
	if (f && fgets(buf, sizeof(buf), f) && strncmp(buf, "running", 7))
		nr = strtol(buf, NULL, 10);
	if (f)
		fclose(f);
	return nr;
}

/*
 * The threads to try, best first: those waiting in a system call that restarts by rewinding
 * (their program loses no time to us: they were waiting anyway), then the others.
 */
static int list_threads(struct helper *h)
{
	pid_t later[MAX_THREADS];
	int nlater = 0;
	struct dirent *d;
	char fn[64];
	DIR *dir;

	snprintf(fn, sizeof(fn), "/proc/%d/task", h->c->pid);
	dir = opendir(fn);
	if (!dir)
		return -errno;
	h->ntids = 0;
	if (h->c->only_tid) {
		closedir(dir);
		h->tids[h->ntids++] = h->c->only_tid;
		return 0;
	}
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);
		long nr;

		if (tid <= 0)
			continue;
		nr = thread_syscall(h->c->pid, tid);
		if (nr >= 0 && waiting_syscall(nr) && nr != SYS_nanosleep &&
		    nr != SYS_clock_nanosleep && h->ntids < MAX_THREADS)
			h->tids[h->ntids++] = tid;
		else if (nlater < MAX_THREADS)
			later[nlater++] = tid;
	}
	closedir(dir);
	for (int i = 0; i < nlater && h->ntids < MAX_THREADS; i++)
		h->tids[h->ntids++] = later[i];
	return h->ntids ? 0 : -ESRCH;
}

static int explain(const struct ptrace_call *c, const struct outcome *o, char *msg, size_t len)
{
	switch (o->what) {
	case OUT_SEIZE:
		snprintf(msg, len, "ptrace(PTRACE_SEIZE) of pid %d refused: %s", c->pid,
			 strerror(o->sys_errno));
		return -EPERM;
	case OUT_GONE:
		snprintf(msg, len, "pid %d exited", c->pid);
		return -ESRCH;
	case OUT_CHANGED:
		snprintf(msg, len, "pid %d changed its code meanwhile (exec?)", c->pid);
		return -ESRCH;
	case OUT_NO_XSAVE:
		snprintf(msg, len, "pid %d: this CPU's FPU state has no XSAVE layout", c->pid);
		return -ENOTSUP;
	case OUT_WRITE:
		snprintf(msg, len, "cannot write pid %d's stack: %s", c->pid,
			 strerror(o->sys_errno));
		return o->err;
	case OUT_REGS:
		snprintf(msg, len, "cannot set pid %d's registers: %s", c->pid,
			 strerror(o->sys_errno));
		return o->err;
	}
	snprintf(msg, len, "%s", strerror(-o->err));
	return o->err;
}

/*
 * Has PID exited, or is it exiting (a zombie, or on its way: SIGKILL)? Whatever failed then, it
 * failed because the process went: PTRACE_SEIZE of an exiting thread is EPERM, a read of a
 * zombie's memory ESRCH.
 */
static int gone(pid_t pid)
{
	char fn[64], buf[512], *rp;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(fn, sizeof(fn), "/proc/%d/stat", pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	rp = strrchr(buf, ')'); /* after the comm, which may hold anything */
	return rp && rp[1] == ' ' && strchr("ZXx", rp[2]);
}

int ptrace_call__run(const struct ptrace_call *c, struct ptrace_call_result *r, char *msg,
		     size_t len)
{
	struct helper h = { .c = c };
	struct outcome o;
	int fds[2] = { -1, -1 }, status, err;
	ssize_t got;
	pid_t child;

	memset(r, 0, sizeof(*r));
	h.arg_len = strlen(c->arg);
	err = list_threads(&h);
	if (err) {
		snprintf(msg, len, "pid %d has no thread to use: %s", c->pid, strerror(-err));
		goto out;
	}
	struct iovec local = { h.func_bytes, sizeof(h.func_bytes) },
		     remote = { (void *)c->func, sizeof(h.func_bytes) };

	if (process_vm_readv(c->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(h.func_bytes)) {
		err = errno ? -errno : -EFAULT;
		snprintf(msg, len, "cannot read pid %d's dlopen: %s", c->pid, strerror(-err));
		goto out;
	}
	h.xstate = aligned_alloc(64, XSTATE_MAX);
	h.scratch = malloc(STACK_ROOM);
	if (!h.xstate || !h.scratch || pipe2(fds, O_CLOEXEC)) {
		err = -ENOMEM;
		snprintf(msg, len, "out of memory");
		goto out;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		snprintf(msg, len, "fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		close(fds[0]);
		helper_main(&h, fds[1]);
	}
	close(fds[1]);
	fds[1] = -1;
	do
		got = read(fds[0], &o, sizeof(o));
	while (got < 0 && errno == EINTR);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (got != (ssize_t)sizeof(o)) {
		/* Killed by its alarm: every thread it held was let go by the kernel. */
		err = -ETIMEDOUT;
		snprintf(msg, len,
			 "no thread of pid %d reached a safe point within %d s (each was let go "
			 "untouched)",
			 c->pid, c->timeout_s);
		goto out;
	}
	*r = o.r;
	err = o.err ? explain(c, &o, msg, len) : 0;
out:
	if (err && gone(c->pid)) {
		snprintf(msg, len, "pid %d exited", c->pid);
		err = -ESRCH;
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(h.xstate);
	free(h.scratch);
	return err;
}

#else /* !__x86_64__ */

int ptrace_call__run(const struct ptrace_call *c, struct ptrace_call_result *r, char *msg,
		     size_t len)
{
	memset(r, 0, sizeof(*r));
	snprintf(msg, len, "--inject works on x86-64 only (pid %d)", c->pid);
	return -ENOTSUP;
}

#endif
