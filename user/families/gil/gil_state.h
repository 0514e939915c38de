/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the gil family's record side shares between its files: gil.c (processes, totals, the
 * family's hooks), gil_probes.c (files and probes, looks at a process), gil_check.c (how a
 * process is measured). Nothing outside the family includes it.
 */
#ifndef BPFSIGHT_GIL_STATE_H
#define BPFSIGHT_GIL_STATE_H

#include <limits.h>
#include "elf_syms.h"
#include "gil.h"
#include "gil_python.h"
#include "record_ctx.h"
#include "hmap.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "perf_timers.h"
#include "gil.skel.h"

#define NEW_WINDOW_NS	      5000000000ull /* a new process may still map libpython */
#define RECHECK_GAP_NS	      50000000ull   /* at most one look at a process per 50 ms */
#define MAX_PROBES	      8		    /* take_gil/drop_gil and their clones per file */
#define MUTEX_ATTACH_PER_POLL 4		    /* processes; each attach costs ~0.2 s on a VM */

enum { L_COND, L_COND_RET, L_TAKE, L_TAKE_RET, L_DROP, NLINKS };

/*
 * A file gil reads or probes (the uprobe manager keeps it as gil's pointer): glibc (condition
 * wait, mutex) or an interpreter. Both at once when python and libc are linked statically.
 */
struct gil_file {
	int cond;	/* defines pthread_cond_timedwait */
	__u64 cond_off; /* file offsets of the probe sites */
	__u64 lll_off;	/* 0 = __lll_lock_wait unknown (no symtab or debug file) */
	int python;	/* defines _PyRuntime */
	struct gil_pyfile py;
	__u64 take[MAX_PROBES], drop[MAX_PROBES]; /* full mode: take_gil/drop_gil sites */
	__u32 ntake, ndrop;
	int cond_tried, cond_ok; /* both condition-wait probes attached */
	int full_ok;		 /* take_gil (entry, return) and drop_gil probes attached */
	struct uprobe_links links[NLINKS];
	struct gil_file *next;
};

/* What one look at a process found (through the manager's scan of its maps). */
struct gil_look {
	pid_t pid; /* the process looked at; 0 between looks */
	char exe[PATH_MAX];
	struct gil_file *py, *libc;		       /* the first interpreter and glibc mapped */
	__u64 py_bias;				       /* the interpreter's load bias */
	char libc_path[PATH_MAX + 64];		       /* opens it now */
	char py_shown[PATH_MAX], libc_shown[PATH_MAX]; /* as the maps name them */
};

struct gil_proc {
	pid_t pid;
	int status; /* enum gil_py_status of the last look, -1 = never looked at */
	__u64 first_seen_ns, last_check_ns;
	int configured; /* in gil_procs */
	struct bs_gil_cfg cfg;
	struct uprobe_links mutex[2];
	int mutex_on;	  /* both attached */
	int mutex_wanted; /* attach the mutex probes at the next poll (it takes a while) */
	int mutex_failed; /* and do not try again */
	__u64 lll_off;
	char *libc_path;
	/* The last BS_REC_GIL_PROC written, to write again only on change. */
	int written;
	__u32 w_method, w_flags;
	__u64 w_gil;
	char w_note[256];
};

struct gil_state {
	struct record_ctx *ctx;
	struct gil_bpf *skel;
	struct uprobe_mgr *uprobes; /* the recording's (family_attach.h) */
	int listener;		    /* gil's id with it */
	struct gil_file *files;
	struct hmap *procs;   /* (pid, 0) -> struct gil_proc * */
	struct hmap *agg_w;   /* (pid << 32 | tid, 0) -> wait_count + hold_count last written */
	struct hmap *blame_w; /* (pid << 32 | waiter, holder) -> count last written */
	struct gil_py py;     /* scratch: big */
	struct gil_look look; /* scratch: big */
	struct perf_timers sampler; /* --stacks=gil: the holder sampler's events (gil_sample) */
	int full;
	/* processes configured (measured), and pythons whose GIL could not be: the end says
	 * when -t gil alone measured nothing */
	__u32 measured, unmeasured;
	char unmeasured_note[256];
	int starting; /* recording starts: nothing is being drained yet, attach everything now */
};

/* gil_probes.c */
void gil_file_free(struct gil_file *f);
/* The uprobe manager's listener: a file examined (kept if glibc or python), a file mapped. */
void *gil_on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms);
void gil_on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		   const struct uprobe_mapping *mp);
/* Look at what PID maps (into st->look): -errno when PID is gone. */
int gil_look(struct gil_state *st, pid_t pid);
/* The condition-wait probes on glibc file F (at PATH), for every traced process mapping it. */
void gil_libc_attach(struct gil_state *st, struct record_ctx *ctx, struct gil_file *f,
		     const char *path, const char *name);
void gil_proc_unlink_mutex(struct gil_proc *p);
/* The per-process mutex probes gil_proc_check asked for; 0 when attached. */
int gil_proc_link_mutex(struct gil_state *st, struct record_ctx *ctx, struct gil_proc *p);

/* gil_check.c: look at PID now, configure BPF and the probes, say how it is measured. */
void gil_proc_check(struct gil_state *st, struct record_ctx *ctx, pid_t pid);

/* gil.c */
void gil_proc_unconfigure(struct gil_state *st, struct gil_proc *p);
struct gil_proc *gil_proc_get(struct gil_state *st, pid_t pid, int create);

#endif /* BPFSIGHT_GIL_STATE_H */
