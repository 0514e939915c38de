/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The uprobe manager's own state, shared by its files only (users include uprobe_mgr.h):
 *
 *   uprobe_mgr.c        lifecycle, the families, --dry-run's list of sites
 *   uprobe_scan.c       process discovery: /proc/PID/maps scans, the first scan, files
 *                       examined before a process maps them, where an address of a process is
 *   uprobe_examine.c    the ELF lookup of a file seen for the first time: its probe sites
 *   uprobe_attach.c     probes on a file's sites and ld.so's hook, as groups; detaching
 *   uprobe_group.c      a group: the probes of one program on one file, placed in the
 *                       recording's processes (a pid-filtered link per process of the job)
 *   uprobe_closer.c     closing links in the background (each close waits for grace periods)
 *   uprobe_new_code.c   the records that announce new code (fork, exec, dlopen), and launch
 *                       mode's stop until a dlopen's code is probed
 *   uprobe_listeners.c  the listeners: registration, what each is told of a mapping
 *
 * Files are identified by (dev, inode), as the kernel does for uprobes: a file is examined
 * once; only files never seen before cost a scan, and those show up through EXEC and MAP_EXEC
 * records.
 *
 * Where probes go (uprobe_group.c): a uprobe_multi link with a pid makes the kernel write its
 * int3 only into that process's memory (the link's filter on the mm: at attach, at every mmap
 * of the file, across exec; checked on 6.18: a process beside it, Valgrind's, finds its code
 * untouched), and run the program only for that process's threads. A forked child keeps the
 * int3s of its parent's pages but none of its links: the child is linked when its FORK record
 * is read, and in launch mode held until then (MAP_EXEC_FORK). So each group of probes has a
 * link per process of the job that maps its file (the launched command before its exec: every
 * group), made when a scan or a fork shows the mapping and closed at the process's exit.
 * Unscoped (-a without --exclude-*, or a kernel without uprobe_multi links, whose perf-event
 * uprobes would cost a grace period each per process): one link per group on the file, for
 * every process that maps it, now or later; BPF keeps only targets.
 *
 * What else was checked here: a perf-event uprobe with a pid filters the same way, and a
 * forked child's inherited int3 is taken out at its first hit (the program does not run for
 * it either); tracefs uprobes opened as tracepoint perf events with `inherit` follow children
 * from their first instruction in the kernel, but every new thread and child copies each
 * event (one per site: milliseconds a thread), the program must sit on an event without
 * inherit (an inherited copy's exit takes it out for all), and "uprobe" PMU events must not
 * be inherited at all (the kernel reads their path pointer in the forking task: the job's
 * fork fails). bench/RESULTS.md, "A -p target's children from their first instruction".
 */
#ifndef BPFSIGHT_UPROBE_MGR_PRIV_H
#define BPFSIGHT_UPROBE_MGR_PRIV_H

#include <stddef.h>
#include <sys/types.h>
#include "elf_syms.h"
#include "probe_site.h"
#include "ucall_api.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"

#define MAX_FAMILIES  8 /* uprobe API families: cuda, nccl, cublas, cudnn, blas, and room */
#define MAX_CODE_SEGS 4 /* executable segments of a file kept (for load biases) */
#define MAX_PENDING   1024

struct bpf_link;
struct hmap;
struct libmap_bpf;
struct scan_cache;
struct uprobe_closer;

/* A function of a family's table found in a file, and where it is probed. */
struct uprobe_site {
	const struct ucall_table *table;
	__u32 fn;
	__u64 file_off; /* of the probe: function start + site offset */
	struct probe_site ps;
};

/* An ELF file mapped executable somewhere, as (dev, inode). */
struct uprobe_obj {
	__u64 dev, ino;
	char *path;   /* as the first process that mapped it showed it */
	int examined; /* symbols looked up for every family */
	struct uprobe_site *sites;
	__u32 nsites;
	int fd; /* held open once it has a group: later links name it /proc/self/fd/N; or -1 */
	int say_probed;	       /* -v: say its sites are probed once they are in a process */
	struct elf_syms *syms; /* opened lazily for uprobe_mgr__code_at, then kept */
	int syms_failed;
	void **heard; /* what each listener's file() returned, of the NHEARD there were then */
	__u32 nheard;
	struct elf_seg code[MAX_CODE_SEGS];
	__u32 ncode;
};

/* One executable file mapping of a process, as its maps showed it. */
struct pid_mapping {
	__u64 start, end, pgoff, dev, ino;
	struct uprobe_obj *obj;
};

/* A process's executable file mappings at its last scan. */
struct pid_maps {
	struct pid_mapping *v;
	__u32 n;
	__u64 exited_ns; /* when its exit record came (0 = alive, or a pid reused since) */
};

/*
 * An exited process's maps are kept for MAPS_GRACE_NS after its exit record (its last stacks
 * are named as they drain), then freed: process churn cannot grow the manager.
 */
#define MAPS_GRACE_NS 2000000000ull

struct uprobe_fam {
	const struct ucall_table *table;
	struct bpf_program *entry, *ret;
	/* WRAPPED functions' (BS_UCOOKIE_WRAPPED) entry and return in one, or NULL: they get
	 * ENTRY and RET as the others (uprobe_attach.c) */
	struct bpf_program *session;
};

/* How a group's programs run: entry probes are detached before the others (unlink_all). */
enum uprobe_kind { UPROBE_ENTRY, UPROBE_RETURN, UPROBE_SESSION };

/*
 * The probes of one program at sites of one file (uprobe_group.c): one link for every process
 * (unscoped), or one per process of the job that maps the file, each with its pid.
 */
struct uprobe_group {
	struct uprobe_mgr *m;
	struct uprobe_obj *o;
	struct uprobe_group *next; /* the manager's list */
	const struct bpf_program *prog;
	__u64 *offs, *cookies, *refs; /* CNT each; cookies and refs NULL when none */
	__u32 cnt;
	enum uprobe_kind kind;
	char *family;		    /* whose loss a failure is */
	char *what;		    /* "2 cuda entry probes in PATH", for messages */
	struct uprobe_links all;    /* unscoped: on the file, for every process */
	__u32 nlinked;		    /* processes it is placed in (scoped) */
	int failed_said;	    /* a process's link failed: said once */
	struct uprobe_links *owner; /* whose ->group it is (uprobe_mgr__attach_links), or NULL */
};

/* A process's own links (scoped): one per group it is placed in. */
struct pid_links {
	struct {
		struct uprobe_group *g;
		int fd;
	} * v;
	__u32 n;
	size_t cap;
};

struct uprobe_mgr {
	struct record_ctx *ctx;
	struct libmap_bpf *libmap;
	/*
	 * Probes go only into the processes of the job, each by a link of its own (the launched
	 * command and its children, -p's, -a's but the excluded), not on the file for all.
	 */
	int scoped;
	struct uprobe_group *groups;
	struct hmap *links; /* (pid, 0) -> struct pid_links (scoped) */
	struct uprobe_closer *closer;
	pid_t link_all_pid; /* the launched command until it runs: placed in every group */
	__u64 swept_ns;	    /* the last look for links of processes that ended */
	/* children of traced processes not held: linked after they began, and how late at most */
	unsigned long late_forks;
	__u64 late_max_ns;
	struct uprobe_fam fams[MAX_FAMILIES];
	__u32 nfams;
	struct uprobe_listener *listeners; /* a removed one's hooks are NULL: ids stay */
	size_t nlisteners, listeners_cap;
	struct hmap *objs;	    /* (dev, ino) -> struct uprobe_obj * */
	struct hmap *pids;	    /* (pid, 0) -> struct pid_maps * (last scan) */
	pid_t pending[MAX_PENDING]; /* pids to rescan; 0 = every process */
	__u32 npending;
	pid_t *exited; /* pids whose maps go once their grace is over, oldest first */
	__u32 nexited;
	size_t exited_cap;
	struct scan_cache *cache; /* files with probe sites, across recordings (-a) */
	struct hmap *stalled;	  /* (dev, 0): a file there whose reads did not end */
	int closed;		  /* uprobe_mgr__close: probes gone, nothing scanned */
};

/* uprobe_mgr.c */
void uprobe_obj__free(struct uprobe_obj *o);

/* uprobe_listeners.c */
/*
 * The listener told K-th (K from 0 to twice the listeners: those that asked to be first, then
 * the others, each in the order they were added), or UINT32_MAX at a K of the other pass.
 */
__u32 uprobe_mgr__listener_order(const struct uprobe_mgr *m, __u32 k);

/* uprobe_scan.c */
/* The file (DEV, INO), first seen at PATH: known already, or new and not examined yet. */
struct uprobe_obj *uprobe_obj__get(struct uprobe_mgr *m, __u64 dev, __u64 ino, const char *path);
/* A path that opens PID's mapping MP of PATH even inside a container or after the file was
 * replaced. */
void pid_mapping__path(char *buf, size_t len, pid_t pid, const struct pid_mapping *mp,
		       const char *path);
/* Scan PID's maps: examine executable files not seen yet. 0, or -errno when PID is gone. */
int uprobe_mgr__scan_pid(struct uprobe_mgr *m, pid_t pid);
/* Remember PID's file mappings (for symbolization after it exits). Takes V. */
void uprobe_mgr__set_maps(struct uprobe_mgr *m, pid_t pid, struct pid_mapping *v, __u32 n);
/* Examine the file at PATH before any process maps it (its probes are on its inode). */
struct uprobe_obj *uprobe_mgr__prescan(struct uprobe_mgr *m, const char *path);

/* uprobe_examine.c */
/* Look up every family's functions in O, not examined before; probe what it defines. */
void uprobe_obj__examine(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			 pid_t pid);

/* uprobe_reads.c */
/*
 * O's first reads (elf_syms__open(OPEN_PATH, ROOT); with FD, the examination's, an fd of the
 * file held open for what follows and its names only, elf_syms__open_names), where they can
 * be left behind: they may never end (a FUSE file system
 * whose server does not answer). 0 (*SYMS NULL when not ELF or unreadable, *FD -1 when it
 * could not be opened); -ETIMEDOUT when they had not ended after 10 s, or after 1 s once the
 * recording must stop (record_ctx__must_stop), said; a FUSE file system's device is
 * remembered: a file of a FUSE device whose reads stalled before is not read, -EAGAIN.
 */
int uprobe_obj__first_reads(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			    const char *root, int *fd, struct elf_syms **syms);

/* uprobe_attach.c */
/* Entry and return probe on every site of O (a group per family and kind). */
void uprobe_obj__attach(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path);
/* ld.so: have BPF report every change of the link map (dlopen) from now on. */
void uprobe_obj__attach_dl_hook(struct uprobe_mgr *m, struct uprobe_obj *o,
				const struct elf_syms *syms, const char *path);
/* Every probe detached: all entry probes, then all return probes (perf-event ones in the
 * background, link_reaper.h). */
void uprobe_mgr__unlink_all(struct uprobe_mgr *m);

/* uprobe_group.c */
/*
 * A group of probes of PROG at O's CNT sites OFFS (O's file opens at PATH now), of KIND,
 * with O's cookies and semaphores (O's pid ignored): placed now in every process of the job
 * that maps the file (scoped), or on the file for every process. FAMILY's loss when a link
 * fails, said as WHAT. NULL with *ERR when nothing could be placed (unscoped) or no memory.
 */
struct uprobe_group *uprobe_group__new(struct uprobe_mgr *m, struct uprobe_obj *o,
				       const char *family, const struct bpf_program *prog,
				       const char *path, const __u64 *offs, __u32 cnt,
				       const struct uprobe_multi_opts *opts, const char *what,
				       int *err);
/* Every link of G closed (in the background), G forgotten. NULL is fine. */
void uprobe_group__free(struct uprobe_group *g);
/* Whether PID is one of the job's processes (scoped): a target, or -a's not excluded. */
int uprobe_mgr__in_job(struct uprobe_mgr *m, pid_t pid);
/*
 * PID's own links for every group on a file its last scan shows it maps (ALL: every group,
 * mapped or not: the launched command before its exec), when scoped and PID is the job's.
 */
void uprobe_mgr__link_pid(struct uprobe_mgr *m, pid_t pid, int all);
/*
 * PID exited, or is excluded now: its links closed in the background, or, with NOW, before
 * this returns (its probes are out of its memory then).
 */
void uprobe_mgr__unlink_pid(struct uprobe_mgr *m, pid_t pid, int now);
/* The links of processes that have ended, closed (their exit records lost: a full ring). */
void uprobe_mgr__sweep_links(struct uprobe_mgr *m);
/* Every process's own links of entry probes (ENTRIES) or the others closed, waited for. */
void uprobe_mgr__unlink_pids(struct uprobe_mgr *m, int entries);
/* Every group freed (the manager is). */
void uprobe_mgr__free_groups(struct uprobe_mgr *m);

/* uprobe_listeners.c */
/* Tell the listeners that asked for MP's file that PID maps it (as SHOWN). */
void uprobe_mgr__notify_mapped(struct uprobe_mgr *m, pid_t pid, const struct pid_mapping *mp,
			       const char *shown);

#endif /* BPFSIGHT_UPROBE_MGR_PRIV_H */
