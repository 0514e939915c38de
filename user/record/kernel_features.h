/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the running kernel offers, probed once (a tiny map, program or BTF lookup each, never
 * `uname`), and the fallback or clear refusal each absence selects. `record --features`
 * prints the result. BPFSIGHT_FORCE_FALLBACKS=all (every feature that has a fallback) or a
 * comma list of the names below makes a feature read as absent, so make check runs every
 * fallback on a kernel that has everything (tests/e2e/test_fallbacks.py); a trace's options
 * end with without=... when a fallback recorded it. docs/USAGE.md#old-kernels has the user's
 * view; tests/kernels/check_kernels.py (make check-kernels) boots older kernels.
 *
 * What each feature is, since when (Linux, commit), how it is probed, who uses it, and what
 * happens without it:
 *   BPF ring buffer (RINGBUF map, bpf_ringbuf_*)      5.8  457f44363a88; map type; every family:
 *                                                     refused
 *   raw_tp programs                                   4.17 c4f6699dfcb8; implied; proc, osrt,
 *                                                     sched, gil, libmap: none (the floor)
 *   tp_btf programs, btf_trace_* typedefs             5.5  ac4414b5ca47, e8c423fb31fa; the BTF
 *                                                     typedef of each tracepoint used; same
 *                                                     users: *_raw programs, CO-RE reads
 *   vmlinux BTF (/sys/kernel/btf/vmlinux)             5.4  341dfcf8d78e (CONFIG_DEBUG_INFO_BTF);
 *                                                     every CO-RE read: no fallback
 *   sched_switch's 4th argument prev_state            5.18 fa2c3254d7cf; argument count of
 *                                                     btf_trace_sched_switch; sched: *_taskstate_*
 *                                                     programs read prev->__state (5.14+,
 *                                                     2f064a59a11f) or prev->state by CO-RE
 *   task storage (TASK_STORAGE map, bpf_task_storage_get/delete, bpf_get_current_task_btf)
 *                                                     5.11 4cf1bc1f1045, a10787e6d58c,
 *                                                     3ca1032ab7ab; map type; osrt, sched:
 *                                                     hashes by tid; gil, cuda, nccl: left out
 *                                                     or refused (their .needs)
 *   bpf_get_attach_cookie (and perf-event BPF links)  5.15 7adfc6c9b315, b89fbfbb854c; helper;
 *                                                     cuda, nccl (ucall.bpf.h), gpu, nvtx
 *                                                     (shim.bpf.c): left out or refused
 *   uprobe_multi links                                6.6  89ae89f53d20; a link on / answers
 *                                                     EBADF; cuda, nccl, gil, libmap, shim: one
 *                                                     perf-event uprobe per site, the detach
 *                                                     handed to bpfsight-detach (link_reaper.c)
 *   uprobe sessions (BPF_TRACE_UPROBE_SESSION)        6.13; as uprobe_multi; cuda's driver
 *                                                     launches: their return probe fires too and
 *                                                     finds no frame (the same records)
 *   perf-event uprobes (perf_uprobe PMU) / with ref_ctr_offset (USDT semaphores)
 *                                                     4.17 / 4.20 33ea4b24277b / a6ca88b241d5;
 *                                                     implied; the fallback above
 *   bpf_loop                                          5.17 e6f2dd0f8067; helper; stacks (cpu,
 *                                                     --stacks, gil's holder stacks): -t cpu and
 *                                                     --stacks refused
 *   perf-event programs on cpu-clock                  4.9  0515e5999a46; perf_event_open and the
 *                                                     program type; cpu: refused
 *   bpf_probe_read_user/kernel(_str)                  5.5  6ae08ae3dea2; implied by tp_btf; all
 *   bpf_send_signal                                   5.3  8b401f9ed244; implied; libmap (launch
 *                                                     mode stops a process at dlopen)
 *   bpf_task_pt_regs                                  5.15; implied by bpf_loop; stacks (the
 *                                                     user registers the walk starts from)
 *   unwind tables: bpf_loop and BPF_F_MMAPABLE arrays 5.17, 5.5 fc9702273e2e; an
 *                                                     mmapable array created; native stacks:
 *                                                     frame pointers only (docs/STACKS.md)
 *   bpf_task_work_schedule_resume (a task work a BPF program schedules, run as the task
 *   returns to user space)                            6.18; the kfunc in the kernel's BTF;
 *                                                     --stacks=sched: its stacks read by a
 *                                                     sys_exit program every system call of
 *                                                     the machine runs
 *   bpf_send_signal_task (a signal to a task other than the current one)
 *                                                     6.13; the kfunc in the kernel's BTF;
 *                                                     libmap: launch mode's forked children
 *                                                     are not held until their probes are in
 *                                                     (their first calls may be missed)
 *   global data (const volatile rodata), bounded loops 5.2, 5.3 d8eca5bbb2be, 2589726d12a1; all
 * Tracepoint arguments read (all present long before 5.5 unless said): sys_enter(regs, id),
 * sys_exit(regs, ret), sched_switch(preempt, prev, next[, prev_state 5.18]), sched_waking(p),
 * sched_process_fork(parent, child), sched_process_exec(p, old_pid, bprm),
 * sched_process_exit(p) (6.16 added a second argument, not read), task_rename(task, comm).
 * Attach types: tp_btf/raw_tp for those, uprobe/uretprobe (BPF_PROG_TYPE_KPROBE) as
 * uprobe_multi or perf-event links, perf_event for cpu. Maps: HASH, ARRAY, PERCPU_ARRAY (4.6),
 * LRU_HASH (4.10), RINGBUF (5.8), TASK_STORAGE (5.11).
 *
 * So the floor is 5.15 for every family (attach cookies), 5.11 for the tracepoint families
 * and gil, 5.8 to record at all; with 5.17 stacks, with 6.6 cheap detaching, with 6.13 no
 * return probe for the driver launch a CUDA runtime launch makes. Fleets: RHEL 9 (5.14, BPF
 * backported to about 5.16+: the probes decide), Ubuntu 22.04 / DGX OS 6 (5.15: no
 * prev_state, no bpf_loop, no uprobe_multi: all three fallbacks), Debian 12 (6.1: no
 * uprobe_multi), Ubuntu 24.04 (6.8: everything but uprobe sessions).
 */
#ifndef BPFSIGHT_KERNEL_FEATURES_H
#define BPFSIGHT_KERNEL_FEATURES_H

#include <stdio.h>

enum kfeature {
	KF_RINGBUF,	   /* BPF ring buffer (5.8): none, the recording is refused */
	KF_TP_BTF,	   /* tp_btf programs on every tracepoint used (5.5 + BTF): raw_tp */
	KF_PREV_STATE,	   /* sched_switch's prev_state argument (5.18): task state via CO-RE */
	KF_TASK_STORAGE,   /* task storage maps (5.11): hashes keyed by tid (osrt, sched) */
	KF_ATTACH_COOKIE,  /* bpf_get_attach_cookie (5.15): none, uprobe families refused */
	KF_UPROBE_MULTI,   /* uprobe_multi links (6.6): one perf-event uprobe per site */
	KF_BPF_LOOP,	   /* bpf_loop (5.17): no stacks (BPFSIGHT_NO_BPF_LOOP=1 too) */
	KF_PERF_SAMPLING,  /* cpu-clock perf events with a BPF program: none, cpu refused */
	KF_UPROBE_SESSION, /* uprobe sessions (6.13): nested driver launches fire returns too */
	KF_UNWIND_TABLES, /* bpf_loop and mmapable arrays (5.17): native stacks by frame pointers */
	KF_TASK_WORK,	  /* bpf_task_work (6.18): sched's stacks read at every sys_exit */
	KF_SIGNAL_TASK,	  /* bpf_send_signal_task (6.13): a launched job's fork not held */
	KF_NR
};

/*
 * F's probe, for a feature whose probe lives with the code that uses it (KF_UPROBE_MULTI and
 * KF_UPROBE_SESSION: uprobe_multi.c gives it from a constructor, before main). PROBE returns 1
 * when the kernel has F. Without one, F reads absent.
 */
void kfeature__probe_by(enum kfeature f, int (*probe)(void));
/* 1 when the kernel has F and it is not forced off, else 0. Probed on first use. */
int kfeature__has(enum kfeature f);
/* 1 when BPFSIGHT_FORCE_FALLBACKS names F (or "all"). */
int kfeature__forced_off(enum kfeature f);
/* Its name in BPFSIGHT_FORCE_FALLBACKS and `record --features`. */
const char *kfeature__name(enum kfeature f);
/*
 * Arguments the tracepoint TP hands a tp_btf program (its btf_trace_TP prototype in the
 * kernel's BTF), or -1 when the kernel has no BTF for it.
 */
int kfeature__tp_args(const char *tp);
/* The BTF id of the kernel function (kfunc) NAME in the kernel's BTF, or -1. */
int kfeature__kfunc_id(const char *name);
/*
 * PROG's calls of the made-up helper CALL_ID made calls of the kfunc NAME, before PROG is
 * loaded. A kfunc is called so, not as an extern: libbpf 1.1 resolves every extern of an
 * object, loaded programs or not, and looks a kfunc missing from vmlinux up in every module's
 * BTF, which a recorder without CAP_SYS_ADMIN may not (EPERM): the object would not load at all
 * on a kernel without it. The program's own instructions, before libbpf appends its
 * subprograms: the call must be inlined there. 0, -ENOENT (no such kfunc, or no such call).
 */
struct bpf_program;
int kfeature__call_kfunc(struct bpf_program *prog, int call_id, const char *name);
/*
 * The features this recording goes without (absent or forced off), comma-separated into
 * BUF ("" when none): a trace's `options` says which paths recorded it.
 */
void kfeatures__missing(char *buf, size_t len);
/* `bpfsight record --features`: one line per feature: present, absent or forced, fallback. */
void kfeatures__print(FILE *f);

#endif /* BPFSIGHT_KERNEL_FEATURES_H */
