// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler process (sampler/sampler.h): its channel made and mapped, the program written
 * from the binary into a memory file and run from it, its end waited for.
 *
 * The child keeps no capability (NVML reads what /dev/nvidia* lets any user read), none of
 * the recorder's descriptors but the channel's, and dies with the recorder
 * (PR_SET_PDEATHSIG, set again by the sampler itself). It is forked before the recorder's
 * seccomp filter is installed (families attach first), so its exec is allowed, and the filter
 * never applies to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "gpumetrics.h"
#include "fd_write.h"
#include "privileges.h"

extern const unsigned char bpfsight_gpum_sampler_start[], bpfsight_gpum_sampler_end[];
extern char **environ;

#ifndef MFD_EXEC
#define MFD_EXEC 0x10u /* 6.3: executable whatever vm.memfd_noexec says by default */
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1u << 2)
#endif

/* The ring: four seconds of samples at the rate asked, 8 devices, a KEY-sized record each. */
static __u64 ring_size(unsigned hz)
{
	__u64 want = (__u64)hz * 8 * 256 * 4;

	if (want < GPUM_RING_MIN)
		want = GPUM_RING_MIN;
	if (want > GPUM_RING_MAX)
		want = GPUM_RING_MAX;
	return (want + 4095) & ~4095ull;
}

static int memfd(const char *name, unsigned flags)
{
	int fd = (int)syscall(SYS_memfd_create, name, flags | MFD_EXEC);

	if (fd < 0 && errno == EINVAL) /* before 6.3 */
		fd = (int)syscall(SYS_memfd_create, name, flags);
	return fd < 0 ? -errno : fd;
}

static int make_chan(struct gpum_sampler *sp, unsigned hz)
{
	__u64 size = ring_size(hz);
	void *p;
	int fd;

	fd = (int)syscall(SYS_memfd_create, "bpfsight-gpum-chan", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, GPUM_CHAN_HDR + size)) {
		int err = -errno;

		close(fd);
		return err;
	}
	p = mmap(NULL, GPUM_CHAN_HDR + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	sp->chan_fd = fd;
	sp->chan = p;
	sp->map_len = GPUM_CHAN_HDR + size;
	sp->ring = (char *)p + GPUM_CHAN_HDR;
	sp->chan->magic = GPUM_CHAN_MAGIC;
	sp->chan->version = GPUM_CHAN_VERSION;
	sp->chan->size = size;
	return 0;
}

/* The embedded program in a memory file it can be run from. */
static int program_fd(void)
{
	size_t len = bpfsight_gpum_sampler_end - bpfsight_gpum_sampler_start;
	int fd, err;

	if (!len)
		return -ENOEXEC; /* a build without it */
	fd = memfd("bpfsight-gpum-sampler", MFD_CLOEXEC);
	if (fd < 0)
		return fd;
	err = fd__write_all(fd, bpfsight_gpum_sampler_start, len);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * The child's first system call waits for the parent's word that it has told the probes the
 * child's pid (BORN): -a's families keep a thread's slot from its first call on, so a call
 * made before would have them trace the sampler to its end. A bounded spin with no system
 * call in it: the parent's word comes microseconds after the fork, and a parent that died
 * between the two leaves the child going on alone (it then dies by PR_SET_PDEATHSIG's check).
 */
#define GATE_SPINS (1u << 30)

static void wait_gate(const __u32 *gate)
{
	for (unsigned i = 0; i < GATE_SPINS && !__atomic_load_n(gate, __ATOMIC_ACQUIRE); i++)
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#else
		__asm__ volatile("" ::: "memory");
#endif
}

/* In the child: only what the sampler needs, then the sampler. Never returns. */
static void run_child(int exe, int chan, char *const argv[], const __u32 *gate)
{
	int null;

	wait_gate(gate);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (null >= 0)
		dup2(null, STDIN_FILENO);
	/* Every descriptor of the recorder closes at the exec but the channel's. */
	syscall(SYS_close_range, 3, chan - 1, CLOSE_RANGE_CLOEXEC);
	syscall(SYS_close_range, chan + 1, ~0u, CLOSE_RANGE_CLOEXEC);
	fcntl(chan, F_SETFD, 0);
	fcntl(exe, F_SETFD, FD_CLOEXEC);
	privileges__limit(0);
	fexecve(exe, argv, environ);
	_exit(127);
}

int gpum_sampler__start(struct gpum_sampler *sp, const char *devices, unsigned hz, int proc,
			void (*born)(void *arg, pid_t pid), void *arg)
{
	char fdarg[16], hzarg[16];
	char *argv[] = { "bpfsight-gpum-sampler", fdarg, hzarg, (char *)devices,
			 proc ? "1" : "0",	  NULL };
	sigset_t all, old;
	__u32 *gate;
	int exe, err;
	pid_t pid;

	memset(sp, 0, sizeof(*sp));
	sp->chan_fd = -1;
	err = make_chan(sp, hz);
	if (err)
		return err;
	exe = program_fd();
	if (exe < 0)
		return exe;
	gate = mmap(NULL, sizeof(*gate), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (gate == MAP_FAILED) {
		err = -errno;
		close(exe);
		return err;
	}
	snprintf(fdarg, sizeof(fdarg), "%d", sp->chan_fd);
	snprintf(hzarg, sizeof(hzarg), "%u", hz);
	/* No handler of the recorder's runs in the child before its exec. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (!pid)
		run_child(exe, sp->chan_fd, argv, gate);
	err = pid < 0 ? -errno : 0;
	if (pid > 0 && born)
		born(arg, pid);
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	munmap(gate, sizeof(*gate));
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(exe);
	if (err)
		return err;
	sp->pid = pid;
	return 0;
}

int gpum_sampler__exited(struct gpum_sampler *sp)
{
	int status;

	if (sp->pid <= 0 || sp->exited)
		return sp->exited;
	if (waitpid(sp->pid, &status, WNOHANG) == sp->pid) {
		sp->exited = 1;
		sp->status = status;
	}
	return sp->exited;
}

void gpum_sampler__stop(struct gpum_sampler *sp, __u64 wait_ns)
{
	struct timespec pause = { 0, 2000000 };
	__u64 waited = 0;

	if (sp->chan)
		__atomic_store_n(&sp->chan->stop, 1, __ATOMIC_RELEASE);
	if (sp->pid <= 0)
		return;
	/* It ends at its next tick; NVML stuck in a call to a lost GPU does not hold the stop. */
	while (!gpum_sampler__exited(sp) && waited < wait_ns) {
		nanosleep(&pause, NULL);
		waited += pause.tv_nsec;
	}
	if (sp->exited)
		return;
	/* One stuck in the driver dies once its call returns: not waited for past a bound. */
	kill(sp->pid, SIGKILL);
	sp->killed = 1;
	for (waited = 0; !gpum_sampler__exited(sp) && waited < GPUM_KILL_WAIT_NS;
	     waited += pause.tv_nsec)
		nanosleep(&pause, NULL);
}

void gpum_sampler__free(struct gpum_sampler *sp)
{
	if (sp->pid > 0 && !sp->exited)
		gpum_sampler__stop(sp, 0);
	if (sp->chan)
		munmap(sp->chan, sp->map_len);
	if (sp->chan_fd >= 0)
		close(sp->chan_fd);
	memset(sp, 0, sizeof(*sp));
	sp->chan_fd = -1;
}
