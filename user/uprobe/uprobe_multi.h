/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * uprobe_multi links (Linux 6.6+): many offsets of one file on one program in one link.
 * Why it matters here: each perf-event uprobe unregisters with its own RCU-tasks-trace and
 * SRCU grace periods, so detaching a few hundred of them takes minutes (bench/RESULTS.md,
 * "Figures the code's comments cite"); a multi link pays that once. libbpf 1.1 (Debian 12) has no API for it, so the
 * link is created with the raw bpf(2) command.
 */
#ifndef BPFSIGHT_UPROBE_MULTI_H
#define BPFSIGHT_UPROBE_MULTI_H

#include <linux/types.h>
#include <sys/types.h>

struct bpf_program;
struct bpf_link;

/* BPF_TRACE_UPROBE_MULTI of the kernel's uapi (6.6+), absent from Debian 12's headers. */
#define UPROBE_MULTI_ATTACH_TYPE 48
/* BPF_TRACE_UPROBE_SESSION (6.13+): one program at entry and return, the return skipped when
 * the entry returns non-zero. */
#define UPROBE_SESSION_ATTACH_TYPE 57

/* 1 when the running kernel has uprobe_multi links (probed: kernel_features.h). */
int uprobe_multi__supported(void);
/* Make PROG attachable with uprobe_multi__attach (before its object is loaded). */
int uprobe_multi__prepare(struct bpf_program *prog);
/* The same for a session program (uprobe_multi_opts.session). */
int uprobe_multi__prepare_session(struct bpf_program *prog);
/*
 * Attach PROG (prepared) at CNT file OFFSETS of PATH, for every process, with COOKIES
 * (may be NULL); RETPROBE for a return probe. Returns the link fd (close() detaches) or a
 * negative errno.
 */
int uprobe_multi__attach(const struct bpf_program *prog, const char *path, const __u64 *offsets,
			 const __u64 *cookies, __u32 cnt, int retprobe);

struct uprobe_multi_opts {
	const __u64 *cookies;	      /* NULL: every cookie 0 */
	const __u64 *ref_ctr_offsets; /* NULL: none; else per offset, 0 = none (USDT semaphores) */
	pid_t pid;		      /* 0: every process mapping PATH; else that process only */
	int retprobe;
	int session; /* a uprobe session (PROG prepared with uprobe_multi__prepare_session) */
};

/*
 * uprobe_multi__attach with semaphores and a pid filter. The kernel installs the probes, and
 * bumps a semaphore (ref_ctr), only in the processes the filter accepts: with a pid, other
 * processes mapping PATH never see their semaphore move.
 */
int uprobe_multi__attach_opts(const struct bpf_program *prog, const char *path,
			      const __u64 *offsets, __u32 cnt, const struct uprobe_multi_opts *o);

/* uprobe_multi__attach_opts for a program loaded by fd (the feature probe's). */
int uprobe_multi__attach_fd(int prog_fd, const char *path, const __u64 *offsets, __u32 cnt,
			    const struct uprobe_multi_opts *o);

/*
 * Probes attached together and detached together, as one uprobe_multi link where the
 * kernel has them (PROG prepared with uprobe_multi__prepare), else one perf-event uprobe
 * per offset (bpf_uprobe_opts.ref_ctr_offset, the pid; PROG loaded as a plain uprobe).
 */
struct uprobe_group;
struct uprobe_links {
	int fd; /* uprobe_multi link, or -1 */
	struct bpf_link **links;
	__u32 nlinks;
	/* uprobe_mgr__attach_links's probes for the job's processes: their links, made and
	 * closed by the uprobe manager as they come and go (uprobe_mgr_priv.h); or NULL */
	struct uprobe_group *group;
};

/* 1 when process PID has ended (gone, or a zombie): nothing of it can be probed. */
int uprobe_multi__process_gone(pid_t pid);

/*
 * Attach into L (zeroed, or detached): 0 or a negative errno (nothing stays attached); with a
 * pid, -ESRCH whenever that process ended meanwhile, whatever the failure said.
 */
int uprobe_links__attach(struct uprobe_links *l, const struct bpf_program *prog, const char *path,
			 const __u64 *offsets, __u32 cnt, const struct uprobe_multi_opts *o);
/* Detach everything in L (a zeroed L is fine), its group's links too; L can be attached again
 * (uprobe_group.c). */
void uprobe_links__detach(struct uprobe_links *l);
/* L's own links alone, not its group's (attach's undoing; bench/floor has no groups). */
void uprobe_links__close(struct uprobe_links *l);

#endif /* BPFSIGHT_UPROBE_MULTI_H */
