// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Raw BPF_LINK_CREATE for uprobe_multi links (see uprobe_multi.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "link_reaper.h"
#include "uprobe_broker.h"
#include "uprobe_multi.h"

/* A value from the kernel's uapi (linux/bpf.h of 6.6+), absent from Debian 12's headers. */
#define F_UPROBE_MULTI_RETURN 1

/* The link_create member of union bpf_attr, uprobe_multi variant. */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 _pad;
};

_Static_assert(offsetof(struct link_create_uprobe_multi, path) == 16, "uapi layout");
_Static_assert(offsetof(struct link_create_uprobe_multi, pid) == 56, "uapi layout");

/*
 * uprobe_multi (SESSION 0) or uprobe session links (1): a link on "/" (a directory) with one
 * offset is refused with EBADF by a kernel that has the link type and EINVAL (unknown attach
 * type) by one that has not; libbpf's own probe does the same.
 */
static int probe_uprobe_link(int session)
{
	struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = (enum bpf_attach_type)(
			    session ? UPROBE_SESSION_ATTACH_TYPE : UPROBE_MULTI_ATTACH_TYPE));
	struct uprobe_multi_opts uo = { .session = session };
	__u64 off = 0;
	int prog, link, err;

	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "bs_probe_um", "GPL", ret0, 2, &o);
	if (prog < 0)
		return 0;
	link = uprobe_multi__attach_fd(prog, "/", &off, 1, &uo);
	err = link < 0 ? link : 0;
	if (link >= 0)
		close(link);
	close(prog);
	return err == -EBADF;
}

static int probe_multi(void)
{
	return probe_uprobe_link(0);
}

static int probe_session(void)
{
	return probe_uprobe_link(1);
}

/* The feature table's probes for these links live here, beside the links (kernel_features.h). */
__attribute__((constructor)) static void give_probes(void)
{
	kfeature__probe_by(KF_UPROBE_MULTI, probe_multi);
	kfeature__probe_by(KF_UPROBE_SESSION, probe_session);
}

int uprobe_multi__supported(void)
{
	return kfeature__has(KF_UPROBE_MULTI);
}

int uprobe_multi__prepare(struct bpf_program *prog)
{
	return bpf_program__set_expected_attach_type(
		prog, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
}

int uprobe_multi__prepare_session(struct bpf_program *prog)
{
	return bpf_program__set_expected_attach_type(
		prog, (enum bpf_attach_type)UPROBE_SESSION_ATTACH_TYPE);
}

int uprobe_multi__attach(const struct bpf_program *prog, const char *path, const __u64 *offsets,
			 const __u64 *cookies, __u32 cnt, int retprobe)
{
	struct uprobe_multi_opts o = { .cookies = cookies, .retprobe = retprobe };

	return uprobe_multi__attach_opts(prog, path, offsets, cnt, &o);
}

int uprobe_multi__attach_opts(const struct bpf_program *prog, const char *path,
			      const __u64 *offsets, __u32 cnt, const struct uprobe_multi_opts *o)
{
	return uprobe_multi__attach_fd(bpf_program__fd(prog), path, offsets, cnt, o);
}

int uprobe_multi__attach_fd(int prog_fd, const char *path, const __u64 *offsets, __u32 cnt,
			    const struct uprobe_multi_opts *o)
{
	/* The kernel wants every byte past what it knows zeroed: one whole zeroed bpf_attr. */
	union {
		struct link_create_uprobe_multi lc;
		char raw[sizeof(union bpf_attr) > 64 ? sizeof(union bpf_attr) : 64];
	} attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.lc.prog_fd = prog_fd;
	attr.lc.attach_type = o->session ? UPROBE_SESSION_ATTACH_TYPE : UPROBE_MULTI_ATTACH_TYPE;
	attr.lc.path = (__u64)(unsigned long)path;
	attr.lc.offsets = (__u64)(unsigned long)offsets;
	attr.lc.cookies = (__u64)(unsigned long)o->cookies;
	attr.lc.ref_ctr_offsets = (__u64)(unsigned long)o->ref_ctr_offsets;
	attr.lc.cnt = cnt;
	attr.lc.multi_flags = o->retprobe ? F_UPROBE_MULTI_RETURN : 0;
	attr.lc.pid = o->pid > 0 ? o->pid : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int uprobe_multi__process_gone(pid_t pid)
{
	char fn[64], exe[8];

	/* A zombie keeps its pid but not its memory: nothing of it can be probed any more. */
	snprintf(fn, sizeof(fn), "/proc/%d/exe", pid);
	return readlink(fn, exe, sizeof(exe)) < 0 && (errno == ENOENT || errno == ESRCH);
}

static int attach(struct uprobe_links *l, const struct bpf_program *prog, const char *path,
		  const __u64 *offsets, __u32 cnt, const struct uprobe_multi_opts *o)
{
	int err;

	if (uprobe_multi__supported()) {
		l->fd = uprobe_multi__attach_opts(prog, path, offsets, cnt, o);
		return l->fd < 0 ? l->fd : 0;
	}
	l->links = calloc(cnt, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	for (__u32 i = 0; i < cnt; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = o->retprobe);

		uo.bpf_cookie = o->cookies ? o->cookies[i] : 0;
		uo.ref_ctr_offset = o->ref_ctr_offsets ? o->ref_ctr_offsets[i] : 0;
		l->links[i] = uprobe_broker__attach(prog, o->pid > 0 ? o->pid : -1, path,
						    offsets[i], &uo);
		if (!l->links[i]) {
			err = -errno;
			uprobe_links__close(l);
			return err;
		}
		l->nlinks++;
	}
	return 0;
}

int uprobe_links__attach(struct uprobe_links *l, const struct bpf_program *prog, const char *path,
			 const __u64 *offsets, __u32 cnt, const struct uprobe_multi_opts *o)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	err = attach(l, prog, path, offsets, cnt, o);
	/*
	 * A process that ended while its probes were being attached fails on its path (its
	 * /proc/PID/map_files went with it: ENOENT), not with ESRCH: say it ended, so that callers
	 * tell it from a probe that could not be attached (it missed nothing).
	 */
	if (err && o->pid > 0 && uprobe_multi__process_gone(o->pid))
		return -ESRCH;
	return err;
}

void uprobe_links__close(struct uprobe_links *l)
{
	if (l->fd > 0)
		close(l->fd);
	link_reaper__destroy(l->links, l->nlinks);
	free(l->links);
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}
