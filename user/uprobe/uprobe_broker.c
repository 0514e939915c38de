// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The uprobe broker (uprobe_broker.h): a process that keeps CAP_SYS_ADMIN to open uprobes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "privileges.h"
#include "seccomp_list.h"
#include "uprobe_broker.h"

/* A request: one SOCK_SEQPACKET message, answered by an int (0 with the descriptor, or -errno). */
struct broker_req {
	__u64 off;
	__u64 ref_ctr_off;
	__s32 pid;
	__u32 retprobe;
	char path[PATH_MAX];
};

#define REF_CTR_SHIFT 32 /* PERF_UPROBE_REF_CTR_OFFSET_SHIFT */

static int broker_fd = -1;
static pthread_mutex_t broker_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first number in FILE after PREFIX (sysfs: "8", "config:0"), or -1. */
static int sysfs_int(const char *file, const char *prefix)
{
	char buf[64] = "";
	FILE *f = fopen(file, "re");
	int v = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && !strncmp(buf, prefix, strlen(prefix)))
		v = atoi(buf + strlen(prefix));
	fclose(f);
	return v;
}

static int open_uprobe(const struct broker_req *r, int type, int retbit)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = (__u32)type };
	int fd;

	if (type < 0 || (r->retprobe && retbit < 0))
		return -EOPNOTSUPP;
	if (r->path[0] != '/' || r->retprobe > 1 || r->pid < -1 || r->ref_ctr_off >> 32)
		return -EINVAL;
	a.config = r->ref_ctr_off << REF_CTR_SHIFT | (r->retprobe ? 1ull << retbit : 0);
	a.config1 = (__u64)(unsigned long)r->path;
	a.config2 = r->off;
	fd = (int)syscall(SYS_perf_event_open, &a, r->pid, r->pid == -1 ? 0 : -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Send ERR, with FD when ERR is 0. */
static int send_answer(int sock, int err, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &err, sizeof(err) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (!err) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == sizeof(err) ? 0 : -1;
}

/* Every descriptor but KEEP closed: the broker holds nothing of the recorder's. */
static void close_all_but(int keep)
{
	DIR *d;
	struct dirent *e;

	if (!syscall(SYS_close_range, 0, keep - 1, 0) &&
	    !syscall(SYS_close_range, keep + 1, ~0u, 0))
		return;
	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != keep && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
}

static __attribute__((noreturn)) void broker_main(int sock, pid_t parent)
{
	static const struct seccomp_rule calls[] = {
		{ SYS_recvmsg },
		{ SYS_sendmsg },
		{ SYS_perf_event_open },
		{ SYS_close },
		{ SYS_exit },
		{ SYS_exit_group },
		{ SYS_rt_sigreturn },
		{ SYS_restart_syscall },
	};
	static const int quiet[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP };
	int type = sysfs_int("/sys/bus/event_source/devices/uprobe/type", "");
	int retbit = sysfs_int("/sys/bus/event_source/devices/uprobe/format/retprobe", "config:");
	struct broker_req req;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	/* A terminal's ^C reaches the whole group: the recorder stops, and ends the broker. */
	for (unsigned int i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	close_all_but(sock);
	prctl(PR_SET_NAME, "bpfsight-uprobe", 0, 0, 0);
	if (privileges__limit(1ull << CAP_SYS_ADMIN | 1ull << CAP_SYS_PTRACE |
			      1ull << CAP_DAC_READ_SEARCH | 1ull << CAP_CHECKPOINT_RESTORE) ||
	    seccomp_list__install(calls, sizeof(calls) / sizeof(calls[0]), SECCOMP_LIST_ALLOW, 0))
		_exit(1);
	for (;;) {
		struct iovec iov = { &req, sizeof(req) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		int fd;

		if (recvmsg(sock, &mh, 0) != sizeof(req))
			_exit(0); /* the recorder closed its end */
		req.path[sizeof(req.path) - 1] = 0;
		fd = open_uprobe(&req, type, retbit);
		if (send_answer(sock, fd < 0 ? fd : 0, fd))
			_exit(0);
		if (fd >= 0)
			close(fd);
	}
}

int uprobe_broker__start(void)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	if (broker_fd >= 0)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0)
		broker_main(sv[1], parent);
	close(sv[1]);
	broker_fd = sv[0];
	return 0;
}

int uprobe_broker__reply(int sock)
{
	/* Zeroed: nothing in it is taken for a descriptor unless the kernel put it there. */
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr mh = { .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct iovec iov;
	struct cmsghdr *c;
	int err = -EPIPE, fd = -1, many = 0;
	ssize_t n;

	iov = (struct iovec){ &err, sizeof(err) };
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	/*
	 * A stop signal interrupts the wait (the recorder's handlers do not restart calls): read
	 * on, or the answer would be taken for the next request's.
	 */
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno; /* the kernel wrote nothing: no descriptor came */
	/* What the kernel passed is ours to close, whatever else is wrong with the answer. */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t nfds =
			c->cmsg_len > CMSG_LEN(0) ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < nfds; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0) {
				fd = got;
			} else {
				close(got); /* more than one: not the broker's answer */
				many = 1;
			}
		}
	}
	if (n != sizeof(err) || many || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		err = -EPROTO; /* not the broker's answer: a short one, or more than one fd */
	else if (!err && fd < 0)
		err = -EPROTO;
	else if (err > 0)
		err = -EPROTO;
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/* The broker's descriptor for R, or a negative errno. */
static int ask(const struct broker_req *r)
{
	struct iovec iov = { (void *)r, sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int ret = -EPIPE;
	ssize_t n;

	pthread_mutex_lock(&broker_lock);
	do
		n = sendmsg(broker_fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == sizeof(*r))
		ret = uprobe_broker__reply(broker_fd);
	pthread_mutex_unlock(&broker_lock);
	return ret;
}

struct bpf_link *uprobe_broker__attach(const struct bpf_program *prog, pid_t pid, const char *path,
				       size_t off, const struct bpf_uprobe_opts *o)
{
	LIBBPF_OPTS(bpf_perf_event_opts, po, .bpf_cookie = o ? o->bpf_cookie : 0);
	struct broker_req r = { .off = off, .pid = pid < 0 ? -1 : pid };
	struct bpf_link *l;
	int fd, err, n;

	if (broker_fd < 0)
		return bpf_program__attach_uprobe_opts(prog, pid, path, off, o);
	/* The recorder's own descriptors (a file it opened to examine) as the broker sees them. */
	if (!strncmp(path, "/proc/self/", 11))
		n = snprintf(r.path, sizeof(r.path), "/proc/%d/%s", (int)getpid(), path + 11);
	else
		n = snprintf(r.path, sizeof(r.path), "%s", path);
	if (n < 0 || (size_t)n >= sizeof(r.path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	r.retprobe = o && o->retprobe;
	r.ref_ctr_off = o ? o->ref_ctr_offset : 0;
	fd = ask(&r);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	l = bpf_program__attach_perf_event_opts(prog, fd, &po);
	if (!l) {
		err = errno;
		close(fd);
		errno = err;
	}
	return l;
}
