/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The uprobe manager's own state, shared by its files only (users include uprobe_mgr.h):
 *
 *   uprobe_mgr.c        lifecycle, the families, --dry-run's list of sites
 *   uprobe_scan.c       process discovery: /proc/PID/maps scans, the first scan, files
 *                       examined before a process maps them, where an address of a process is
 *   uprobe_examine.c    the ELF lookup of a file seen for the first time: its probe sites
 *   uprobe_attach.c     probes on a file's sites (uprobe_multi or perf-event links), ld.so's
 *                       hook, detaching
 *   uprobe_new_code.c   the records that announce new code (fork, exec, dlopen), and launch
 *                       mode's stop until a dlopen's code is probed
 *   uprobe_listeners.c  the listeners: registration, what each is told of a mapping
 *
 * Files are identified by (dev, inode), as the kernel does for uprobes: a uprobe attached
 * with pid -1 on a file's inode is installed in every process that maps that file, now or
 * later, from its first instruction — forked children, exec'd copies and new processes of
 * -a included — and BPF keeps only targets. So a file is examined once; only files never
 * seen before cost a scan, and those show up through EXEC and MAP_EXEC records.
 *
 * The cost of that choice: while recording, other processes mapping the same file take a
 * (filtered) probe hit per call. Attaching per pid instead would miss the first calls of
 * every new child until user space caught up.
 */
#ifndef BPFSIGHT_UPROBE_MGR_PRIV_H
#define BPFSIGHT_UPROBE_MGR_PRIV_H

#include <stddef.h>
#include <sys/types.h>
#include "elf_syms.h"
#include "probe_site.h"
#include "ucall_api.h"
#include "uprobe_mgr.h"

#define MAX_FAMILIES  8 /* uprobe API families: cuda, nccl, cublas, cudnn, blas, and room */
#define MAX_CODE_SEGS 4 /* executable segments of a file kept (for load biases) */
#define MAX_PENDING   1024

struct bpf_link;
struct hmap;
struct libmap_bpf;
struct scan_cache;

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
	/*
	 * Entry probes (and the dlopen hook), then return probes, apart: they are detached in
	 * that order, so no call's entry is seen once its return can no longer be.
	 */
	struct bpf_link **links, **ret_links; /* perf-event uprobes (kernels before 6.6) */
	__u32 nlinks, nret_links;
	int *fds, *ret_fds; /* uprobe_multi links */
	__u32 nfds, nret_fds;
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

struct uprobe_mgr {
	struct record_ctx *ctx;
	struct libmap_bpf *libmap;
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
/* Entry and return probe on every site of O, for every process (pid -1). */
void uprobe_obj__attach(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path);
/* ld.so: have BPF report every change of the link map (dlopen) from now on. */
void uprobe_obj__attach_dl_hook(struct uprobe_mgr *m, struct uprobe_obj *o,
				const struct elf_syms *syms, const char *path);
/* Every probe detached: all entry probes, then all return probes (perf-event ones in the
 * background, link_reaper.h). */
void uprobe_mgr__unlink_all(struct uprobe_mgr *m);

/* uprobe_listeners.c */
/* Tell the listeners that asked for MP's file that PID maps it (as SHOWN). */
void uprobe_mgr__notify_mapped(struct uprobe_mgr *m, pid_t pid, const struct pid_mapping *mp,
			       const char *shown);

#endif /* BPFSIGHT_UPROBE_MGR_PRIV_H */
