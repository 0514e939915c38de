/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finds and probes the code of uprobe families (cuda, nccl) in traced processes, and tells
 * listeners (the cupti-shim channel, the gil family, --inject) what it finds: the one process
 * discovery of bpfsight, so nothing else reads /proc/PID/maps or ELF files itself. A family
 * only gives its API table (user/families/cuda/cuda_api.c: symbol name and argument spec,
 * ucall_spec.h) and its copy of the two generic programs of bpf/ucall.bpf.c (ucall_family.h).
 * Its files, one per job: uprobe_mgr_priv.h lists them.
 *
 * Where: every file mapped executable in a traced process (/proc/PID/maps), opened through
 * /proc/PID/map_files/START-END (so containers and replaced files work; fallback
 * /proc/PID/root/PATH), looked up once per (dev, inode): .dynsym, then .symtab, then a debug
 * file found by build-id under /usr/lib/debug/.build-id/ (elf_syms.c over elf_file.c). So a
 * libcudart in site-packages/nvidia/cuda_runtime/lib, conda, /usr/local/cuda, cudart linked
 * statically into an executable or another library, and several copies in one process are
 * all found.
 *
 * Without symbols: a table may name a prefix (strref_prefix, ucall_api.h; cuda's "cuda")
 * whose entries are also found by the name string their code loads (elf_strref.c): the CUDA
 * runtime that cuBLAS, cuBLASLt, cuDNN and NCCL (and stripped static-cudart programs) carry
 * passes each entry point's own name ("cudaMemsetAsync") to the API-callback machinery with a
 * RIP-relative lea. One pass over .rodata finds the names (a file without them costs only
 * that pass), one over .text the leas that load them, and .eh_frame_hdr the function around
 * each (its FDE must cover the lea). A name loaded by two functions is left out, and a file
 * where fewer than 32 names are found is left alone (a logger's or a profiler's table of API
 * names is not a runtime). Cost: bench/RESULTS.md, "Runtime entry points found by name".
 *
 * How: an entry uprobe and a uretprobe per function, placed only in the traced processes: a
 * uprobe_multi link with the pid of each process of the job that maps the file, made when a
 * scan or a fork shows the mapping, closed at the process's exit (uprobe_mgr_priv.h): the
 * kernel writes no int3 into any other process, so a program beside the recording under
 * Valgrind or QEMU runs as without it. A launched command's forked child is held until its
 * own are in (MAP_EXEC_FORK); a -p target's is linked as its FORK record is read (its calls
 * in the milliseconds before are missed). Under -a without --exclude-* (and on kernels
 * without uprobe_multi links) one link on the file's inode for every process that maps it,
 * now or later; BPF keeps only targets. Each probe's bpf_cookie (BS_UCOOKIE, records.h) tells
 * the generic programs which function it is and what to copy. Functions whose cookie is
 * BS_UCOOKIE_WRAPPED (cuda's driver launches) get one uprobe session link instead (Linux
 * 6.13+, KF_UPROBE_SESSION; ucall_session in bpf/ucall.bpf.h): its entry returns 1, and no
 * return probe fires, when the caller is a BS_UCOOKIE_WRAPS call (a runtime launch), so such
 * a launch is recorded once (docs/CUDA.md, "One probe pair per launch").
 *
 * Cheap sites: on x86-64 a uprobe on an instruction the kernel emulates (push, nop, jmp)
 * costs far less than one it must single-step (bench/RESULTS.md, "Per-probe cost");
 * probe_site.c moves the probe to the first emulated instruction reached before any branch,
 * while rsp and the argument registers are untouched (so a uretprobe on the same site still
 * finds the return address at (%rsp)), e.g. past an endbr64. `record --dry-run` lists every
 * site with its instruction and cost class.
 *
 * New code: bpf/libmap.bpf.c reports a traced process's exec of a file not seen yet
 * (sched_process_exec) and every change of its link map (a uprobe on ld.so's _dl_debug_state,
 * placed in the traced processes as every other: it runs after a new process's libraries are
 * mapped and around every dlopen; mmap itself cannot be hooked without kprobes or fentry). The record wakes the
 * recorder, which rescans that process's maps. In -p/-a mode the delay until new code is
 * probed is one ring-buffer wakeup plus one maps scan (milliseconds; calls made in that
 * window are missed). In launch mode BPF also sends the process SIGSTOP (taken on its way back
 * to user space); the recorder probes the new code, then sends SIGCONT (uprobe_new_code.c):
 * nothing is missed, at the price of a pause per dlopen (a maps scan).
 *
 * Nesting (bpf/ucall.bpf.h): a driver call made by the runtime is depth 1, and cuda_api_sum
 * counts only depth 0; a call nested deeper than 8 is counted lost (cuda_too_deep,
 * nccl_too_deep), not recorded. Detaching, every entry probe goes before any return probe
 * (uprobe_mgr__unlink_all): a call whose entry is seen after its return probe is gone would
 * leave a frame nothing pops.
 *
 * Names: a runtime launch passes the kernel's host stub; the recorder symbolizes it from the
 * process's ELF files (demangled, native_frames__symbolize) and writes a SYMBOL record before
 * the call record. Driver handles (CUfunction) are named by the cuModuleGetFunction /
 * cuLibraryGetKernel call that returned them; handles created before recording began stay
 * unnamed (hex).
 */
#ifndef BPFSIGHT_UPROBE_MGR_H
#define BPFSIGHT_UPROBE_MGR_H

#include <stdio.h>
#include <sys/types.h>
#include "records.h"
#include "ucall_api.h"

struct bpf_program;
struct elf_sym;
struct elf_syms;
struct probe_site;
struct record_ctx;
struct uprobe_mgr;

/* A manager without the new-code reporter (`bpfsight stacks`: it probes nothing). */
struct uprobe_mgr *uprobe_mgr__new(struct record_ctx *ctx);
/*
 * A recording's manager, with its new-code reporter (bpf/libmap.bpf.c) attached: made by the
 * driver before any family attaches (family_attach.h). NULL with *ERR a negative errno.
 */
struct uprobe_mgr *uprobe_mgr__open(struct record_ctx *ctx, int *err);
/*
 * The recording stops: every probe is detached (links to the reaper when it holds them,
 * link_reaper.h) and nothing is scanned from now on; what was learned of the processes' code
 * stays readable (uprobe_mgr__code_at) and listeners may still be removed, until freed.
 */
void uprobe_mgr__close(struct uprobe_mgr *m);
/* 1 when M is NULL or closed: no scan, no new probe, no more looks at processes. */
int uprobe_mgr__closed(const struct uprobe_mgr *m);
void uprobe_mgr__free(struct uprobe_mgr *m); /* detaches everything */

/*
 * Probe TABLE's functions with ENTRY/RET wherever they are found from now on; those whose
 * cookie is BS_UCOOKIE_WRAPPED with SESSION (a uprobe session program), when not NULL.
 */
int uprobe_mgr__add_family(struct uprobe_mgr *m, const struct ucall_table *table,
			   struct bpf_program *entry, struct bpf_program *ret,
			   struct bpf_program *session);
/* An executable mapping of a file in a process. */
struct uprobe_mapping {
	__u64 start, end, pgoff; /* as /proc/PID/maps shows it */
	__u64 bias;		 /* load bias: the file's ELF address V is at V + bias */
	const char *shown;	 /* the file's path in the process's maps */
};

/*
 * A user of the manager's discovery that probes something else than API functions (the
 * cupti-shim channel, the gil family): told about every ELF file examined, and about every
 * process mapping a file it asked for.
 */
struct uprobe_listener {
	/*
	 * A file examined for the first time. PATH opens it during the call (the manager holds
	 * it open: /proc/self/fd/N); SHOWN is its path in the first process that mapped it;
	 * SYMS its symbols, valid during the call. Return non-NULL to hear about the file's
	 * mappings: the pointer is kept with the file.
	 */
	void *(*file)(void *arg, const char *path, const char *shown, const struct elf_syms *syms);
	/*
	 * PID maps a file FILE() kept a pointer for (COOKIE) at MP, found by a scan or inherited
	 * by a fork; told again on later scans (the listener dedups). PATH opens the file now.
	 */
	void (*mapped)(void *arg, void *cookie, pid_t pid, const char *path,
		       const struct uprobe_mapping *mp);
	/* Optional: the first scan (uprobe_mgr__start) is done; every family is added. */
	void (*started)(void *arg);
	void *arg;
	/*
	 * Told before the listeners without it, whenever they were added: what must be in place
	 * before another listener acts on the same file (pyfunc's spec in a cupti-shim before the
	 * channel raises its semaphores).
	 */
	int first;
};

/* Returns the listener's id (for uprobe_mgr__examine), or a negative errno. */
int uprobe_mgr__add_listener(struct uprobe_mgr *m, const struct uprobe_listener *l);
/*
 * A listener's own probes at CNT offsets OFFS of the file at PATH, into L (detached by
 * uprobe_links__detach): with O's pid, that process alone (uprobe_links__attach); with pid 0,
 * the recording's processes that map the file, now or later: each one of the job (the
 * launched command and its children, -p's tree, -a's but the excluded) by a link of its own,
 * made as scans and forks show the mapping and closed at its exit, so no other process's code
 * is touched; under -a without exclusions, or without uprobe_multi links, one link for every
 * process that maps it. A failure is said once and counted as FAMILY's lost probes
 * (attach_failed), "uprobe WHAT in OBJECT"; a process that ended meanwhile missed nothing
 * and is not said. 0 or -errno.
 */
struct uprobe_links;
struct uprobe_multi_opts;
int uprobe_mgr__attach_links(struct uprobe_mgr *m, const char *family, struct uprobe_links *l,
			     const struct bpf_program *prog, const char *path, const __u64 *offs,
			     __u32 cnt, const struct uprobe_multi_opts *o, const char *what,
			     const char *object);
/*
 * The listener LISTENER hears nothing more: its owner frees what ARG points to while the
 * manager lives on (a family that failed to attach). M NULL or a negative id: nothing.
 */
void uprobe_mgr__remove_listener(struct uprobe_mgr *m, int listener);
/*
 * Examine the file at PATH now, before a process maps it (probes on its inode cover every
 * process that will), if it was not already. Returns what listener LISTENER's file() kept
 * for it, or NULL.
 */
void *uprobe_mgr__examine(struct uprobe_mgr *m, int listener, const char *path);
/*
 * Where to probe function SYM of SYMS: its cheapest safe site (probe_site.h; SYM's file_off
 * plus PS->offset). 0, or -ENOENT when its code cannot be read.
 */
int uprobe_mgr__site(const struct elf_syms *syms, const struct elf_sym *sym, struct probe_site *ps);
/* The first scan, once every family is added: the targets (-p, launch) or all (-a). */
int uprobe_mgr__start(struct uprobe_mgr *m);
/* Examine every executable mapping of PID (0 = every process, for -a). */
int uprobe_mgr__scan(struct uprobe_mgr *m, pid_t pid);
/*
 * Feed every ring-buffer record: a FORK gives the child its parent's maps; an EXEC, and a
 * MAP_EXEC whose process BPF stopped (launch mode), are scanned now; other MAP_EXECs are
 * queued for uprobe_mgr__poll.
 */
void uprobe_mgr__observe(struct uprobe_mgr *m, const struct bs_hdr *rec);
/* The record types uprobe_mgr__observe acts on, 0-terminated: the driver gives it no other. */
extern const __u16 uprobe_mgr__observes[];
/* Scan what was queued (called on each housekeeping tick). */
int uprobe_mgr__poll(struct uprobe_mgr *m);
/*
 * Records telling of new code may have been lost (a full ring): every traced process (with
 * -a every process) is looked at again at the next poll, so none is left unprobed for good.
 */
void uprobe_mgr__rescan_all(struct uprobe_mgr *m);
/* --dry-run: print every site found (object, symbol, offset, instruction, cost class). */
void uprobe_mgr__print_sites(const struct uprobe_mgr *m, FILE *out);

/* Code of a file mapped executable in a process, as uprobe_mgr__code_at finds it. */
struct uprobe_code {
	const char *path;	     /* the file's path as first seen (kept by the manager) */
	const struct elf_syms *syms; /* its symbols and bytes (opened on first use, kept) */
	__u64 vaddr;		     /* the address asked for, in the file's ELF image */
	__u64 start, end;	     /* the mapping that holds it, in the process */
	__u64 pgoff;		     /* the file offset it maps from */
	__u64 dev, ino;		     /* the file */
};

/*
 * Which file mapped executable in PID holds ADDR, and ADDR as an ELF address of that file,
 * for symbolization (user/stacks/native_frames.h). A process's maps are kept after it exits.
 * RESCAN: when ADDR is in no mapping of PID's last scan, scan its maps again first (code
 * mapped since); without, a word that may be no address at all costs no scan. 0, or -ENOENT
 * when no file maps ADDR or the file cannot be read.
 */
int uprobe_mgr__code_at(struct uprobe_mgr *m, pid_t pid, __u64 addr, int rescan,
			struct uprobe_code *out);
/*
 * PID's executable file mappings as its last scan saw them (RESCAN: scanned again first), up
 * to MAX into OUT: path, start, end, pgoff, dev and ino (no symbols opened: uprobe_mgr__code_at
 * gives the rest); how many.
 */
int uprobe_mgr__code_maps(struct uprobe_mgr *m, pid_t pid, int rescan, struct uprobe_code *out,
			  int max);

#endif /* BPFSIGHT_UPROBE_MGR_H */
