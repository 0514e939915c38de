/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the mem family's record side shares between its files: mem.c (the family's hooks)
 * and mem_probes.c (PyTorch's allocator code found in files and probed). Nothing outside the
 * family includes it.
 */
#ifndef BPFSIGHT_MEM_STATE_H
#define BPFSIGHT_MEM_STATE_H

#include <sys/types.h>
#include "mem.h"
#include "record_ctx.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "mem.skel.h"

/* The functions mem probes, by their mangled names (mem_probes.c's table). */
enum {
	MEM_FN_CPU_NEW,
	MEM_FN_CPU_DELETE,
	MEM_FN_CPU_OOM,
	MEM_FN_REPORT,
	MEM_FN_REPORT_OOM,
	MEM_NFNS
};

/* A file that holds PyTorch's allocator code (libc10, libc10_cuda, or torch linked in). */
struct mem_file {
	struct uprobe_links fn[MEM_NFNS]; /* every process mapping it (BPF keeps targets) */
	/* pytorch:malloc, with its semaphore: per target process (its stream; -a: every one) */
	__u64 usdt_off, usdt_sema;
	__u32 usdt_site; /* its index in mem_usdt_sites + 1; 0: the file has none */
	struct uprobe_links usdt_all;
	char *path; /* opens it while the recording lasts (the manager holds it open) */
	struct mem_file *next;
};

/* A target process's own link on a file's USDT site. */
struct mem_usdt_proc {
	pid_t pid;
	struct mem_file *file;
	struct uprobe_links link;
	struct mem_usdt_proc *next;
};

struct mem_state {
	struct record_ctx *ctx;
	struct mem_bpf *skel;
	struct uprobe_mgr *uprobes; /* the recording's (family_attach.h) */
	struct stack_svc *stacks;   /* the recording's, when stacks are read; else NULL */
	int listener;		    /* mem's id with it */
	struct mem_file *files;
	struct mem_usdt_proc *procs;
	__u32 usdt_sites; /* entries of mem_usdt_sites used */
	__u32 probed;	  /* functions probed, over every file */
};

/* mem_probes.c: the uprobe manager's listener. */
void *mem_on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms);
void mem_on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		   const struct uprobe_mapping *mp);
/* PID exited: its USDT links go. */
void mem_proc_gone(struct mem_state *st, pid_t pid);
/* Every probe off (the final drain follows). */
void mem_unlink_all(struct mem_state *st);
void mem_files_free(struct mem_state *st);

#endif /* BPFSIGHT_MEM_STATE_H */
