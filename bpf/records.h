/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The record contract between BPF programs and user space (ring-buffer version 1): the
 * header every record starts with, the records of the recording itself (processes, strings,
 * losses, symbols, stacks) and the loss causes every family may count. Each family's own
 * records are in its header beside its program (bpf/NAME_records.h), which includes this one
 * (the cupti-shim channel's in shim_records.h; the families it carries have theirs,
 * gpu_records.h, nvtx_records.h, torch_records.h; cuda's and nccl's share ucall_records.h). The file format
 * stores records through a codec, so the ring layout (BS_RB_VERSION) and the disk layout are
 * versioned separately.
 *
 * Every record starts with struct bs_hdr; the consumer switches on hdr.type and checks
 * hdr.size against the type's minimum before trusting a field. Records are made of
 * fixed-width fields only, padded explicitly to a multiple of 8 bytes: the on-disk encoding
 * (docs/FORMAT.md) treats every record as an array of little-endian 64-bit words.
 *
 * Type numbers are allocated in blocks of 16, one per family, so that a family only ever
 * adds lines inside its own block. Types are 12 bits (BS_REC_TYPE_MAX, file format 4): 256
 * blocks, of which the first 18 are taken. Values are part of the file format: never
 * renumbered but with a file version (format 4 moved gpumetrics and pyfunc out of the
 * half-blocks they had, and readers map a version-3 file's numbers: trace_renumber.h).
 * The blocks:
 *   0x00 the recording's own (below)   0x10 osrt    0x20 sched   0x30 cuda   0x40 nccl
 *   0x50 gil    0x60 the cupti-shim channel and gpu    0x70 nvtx    0x80 cpu    0x90 torch
 *   0xa0 bpfsight merge's (below; 0xa2 the unwind tables' use, stack_records.h; 0xa3-0xa4
 *        the hang trigger's snapshot, snap_records.h; 0xa5 a python whose frames are not
 *        read, stack_records.h: the recording's own block is full;
 *        0xa8-0xaf: gpumetrics' in files of format 3 and before)
 *   0xb0 mem    0xc0 cublas    0xd0 blas
 *   0xe0 cudnn
 *   0xf0, 0xf1  the file format's own (user/core/trace_format.h); 0xf2-0xf7: pyfunc's in
 *               files of format 3 and before
 *   0x100 gpumetrics    0x110 pyfunc
 *   0x120 the next family's, then 0x130, ... up to 0xfe0
 *   0xff0 the tests' toy families (the toy shim family's too, tests/unit/toy/: one in a
 *         registry)
 * (tests/unit/test_family_toy.c checks that no two families decode the same type.)
 */
#ifndef BPFSIGHT_RECORDS_H
#define BPFSIGHT_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BS_RB_VERSION 1
#define BS_COMM_LEN   16

#define BS_REC_STRING	0x01 /* interned string (user space) */
#define BS_REC_PROCESS	0x02 /* process metadata snapshot (user space) */
#define BS_REC_THREAD	0x03 /* thread metadata snapshot (user space) */
#define BS_REC_LOSS	0x04 /* events lost since the previous loss record of the cause */
#define BS_REC_FORK	0x05 /* new process or thread (BPF, always on) */
#define BS_REC_EXEC	0x06 /* successful execve (BPF, always on) */
#define BS_REC_EXIT	0x07 /* thread exit (BPF, always on) */
#define BS_REC_COMM	0x08 /* thread renamed (BPF, always on) */
#define BS_REC_SYMBOL	0x09 /* name of a code address or handle in a process (user space) */
#define BS_REC_MAP_EXEC 0x0a /* new code may be mapped: exec, dlopen (BPF; uprobe discovery) */
/* 0x0b-0x0d: stacks, see stack_records.h */
#define BS_REC_THREAD_NAME 0x0e /* a thread's name in its runtime: Python's (user space) */
#define BS_REC_THREAD_NS   0x0f /* a thread's id in its own pid namespace (BPF: uprobe families) */
/*
 * Exclusive bound of a record type (format 4; 0x100 before). 12 bits: 256 blocks of 16, room
 * for the next two hundred families, while the tables readers and the recorder keep per type
 * stay small (a byte to a pointer each: 4 to 32 KiB); bs_hdr.type has 16 bits on disk.
 */
#define BS_REC_TYPE_MAX 0x1000
/* The first type of TYPE's block: its family's (a block is 16 types). */
#define BS_REC_BLOCK(type) ((type) & ~0xfu)
/* Written by bpfsight merge only (the recording's own block is full). */
#define BS_REC_RANK	 0xa0 /* where a rank file's records came from */
#define BS_REC_SYNC_BASE 0xa1 /* the sequence a sync group starts at */
/* 0xa2: the unwind tables' use (the recorder's, at its stop), see stack_records.h */
/* 0xa3, 0xa4: the hang trigger's snapshot of the job's threads, see snap_records.h */
/* 0xa5: a Python process whose frames are not read, see stack_records.h */

/*
 * Loss causes: BS_REC_LOSS.cause (below BS_LOSS_MAX). The ones below 16 can happen to any
 * family's events; a family's own causes are in its header and listed by its struct family
 * (`losses`), each a number no other family uses. Those of the families of the first 16
 * blocks are their block's first types (0x30: cuda's), gpumetrics' 0xa8 to 0xaa, the toy's
 * 0xf9; a new family takes free numbers from 0x10 up (0x10 to 0x2f are free: each family's
 * header names its own; tests/unit/test_family_toy.c checks that no two families declare the
 * same). 6 (the cupti-shim's) and 7 (sched's) predate that rule and keep their numbers.
 * Never renumber.
 */
#define BS_LOSS_RINGBUF_FULL 0 /* bpf_ringbuf_reserve failed: consumer too slow */
/* per-thread state could not be kept (task storage not created): an interval not timed */
#define BS_LOSS_TASK_MAP   1
#define BS_LOSS_AGG_MAP	   2   /* aggregate map full: short calls not counted */
#define BS_LOSS_TARGET_MAP 3   /* target map full: a child process is not followed */
#define BS_LOSS_ATTACH	   4   /* a probe failed to attach (count = probes) */
#define BS_LOSS_WRITE	   5   /* user space could not write a chunk */
#define BS_LOSS_FLIGHT	   8   /* flight recorder: records of the window its SIZE could not hold */
#define BS_LOSS_STACK	   9   /* a stack not taken: a program it interrupted was taking one */
#define BS_LOSS_MAX	   256 /* every cause is below it */
#define BS_LOSS_SHARED	   16  /* causes below it are the recording's (and 6, 7) */

/*
 * The `lost` BPF array and user space's counts beside it count each cause for the family
 * whose events were lost, by the family's index in the registry (families[], set in each BPF
 * object's rodata bs_loss_family), not by its record-type block: a cause below 16 of family
 * FAM is FAM * 16 + CAUSE; a family's own cause (a number no other family uses) keeps
 * BS_LOSS_FAMILIES * 16 + CAUSE. Keys are the recorder's alone: a LOSS record names the family
 * by its block (bs_loss.block).
 */
#define BS_LOSS_FAMILIES 64 /* families a registry has at most (FAMILY_MAX) */
#define BS_LOST_KEY(fam, cause)                                                                    \
	((cause) < BS_LOSS_SHARED ? (fam)*BS_LOSS_SHARED + (cause)                                 \
				  : BS_LOSS_FAMILIES * BS_LOSS_SHARED + (cause))
#define BS_LOST_KEYS (BS_LOSS_FAMILIES * BS_LOSS_SHARED + BS_LOSS_MAX)
/*
 * bs_loss.block: the family is said (BS_LOSS_BLOCK_SET | the first type of its block), or not
 * (0). Files of format 3 and before said it as 0x100 | block: readers map it (trace_renumber.h).
 */
#define BS_LOSS_BLOCK_SET 0x10000

/* records in the ring when the recording stopped that it could not read in its stop time */
#define BS_LOSS_STOP_UNREAD 10
/* --capture-range, a file per range: an event of a range that came after its file closed */
#define BS_LOSS_CAPTURE_LATE 11
/* a stack not interned: its process (or the recording) made as many as the recorder keeps */
#define BS_LOSS_STACKS_CAPPED 12
/* a name not interned: the recording's names reached the bytes the recorder keeps */
#define BS_LOSS_STRINGS_CAPPED 13

/* The shared `control` array (common.bpf.h): its values, by index, that user space sets. */
#define BS_CTL_FLAGS   0  /* bits: */
#define BS_CTL_STOPPED 1u /* the recording stops: no new records */
/* With STOPPED: this is the recording's end, not --start-at's gate before its start (programs
 * that keep state, sched's, freeze at the end but keep it live through the gate). */
#define BS_CTL_ENDED 2u
/*
 * A process of bpfsight's own besides the recorder, which -a does not trace either (the GPU
 * metrics sampler: traced, its wake-ups would fill the trace); 0: none.
 */
#define BS_CTL_OWN_PID 1
#define BS_CTL_ENTRIES 2

/* Common header of every record. */
struct bs_hdr {
	__u16 type;
	__u16 size; /* whole record in bytes, header included, multiple of 8 */
	__u32 cpu;
	__u32 pid; /* tgid, as user space calls it */
	__u32 tid;
	__u64 ts; /* CLOCK_MONOTONIC ns; the start of the interval for interval records */
};

/* Interned string; bytes follow, NUL-padded to a multiple of 8. ids start at 1. */
struct bs_string {
	struct bs_hdr h;
	__u32 id;
	__u32 len; /* bytes of text, without padding or terminator */
		   /* char text[]; */
};

/* Process snapshot written when a process is first seen and after each exec. */
struct bs_process {
	struct bs_hdr h; /* pid = the process; tid = its main thread */
	__u32 ppid;
	__u32 cmdline_id; /* bs_string ids, 0 = unknown */
	__u32 exe_id;
	__u32 uid;
	__u64 start_ns; /* process start, CLOCK_MONOTONIC ns (0 = unknown) */
	char comm[BS_COMM_LEN];
};

/* Thread snapshot: names every thread seen at start and on creation. */
struct bs_thread {
	struct bs_hdr h;
	char name[BS_COMM_LEN];
};

/*
 * The name a language runtime gave a thread (Python's threading.Thread name: "MainThread",
 * "cpu-0"), read from the process while it lives (user/python/thread_names.c): written when
 * first read and whenever it changes. Readers show it in place of the thread's comm, until
 * the thread's tid is reused (FORK) or its process execs. hdr.pid/tid: the thread; hdr.ts:
 * when it was read.
 */
struct bs_thread_name {
	struct bs_hdr h;
	__u32 name_id; /* bs_string id of the name */
	__u32 source;  /* BS_THREAD_NAME_* */
};

#define BS_THREAD_NAME_PYTHON 1 /* threading.Thread's name (its _name) */

struct bs_loss {
	struct bs_hdr h; /* ts = when user space noticed */
	__u32 cause;	 /* BS_LOSS_* */
	/* BS_LOSS_BLOCK_SET | the first type of the record-type block of the family whose events
	 * were lost (0x30: cuda); 0: not said (files of before, losses of the whole file:
	 * write_failed) */
	__u32 block;
	__u64 count; /* lost since the previous loss record of this cause */
};

/* hdr pid/tid = the parent thread; child_tid == child_pid for a new process. */
struct bs_fork {
	struct bs_hdr h;
	__u32 child_pid;
	__u32 child_tid;
	char comm[BS_COMM_LEN];
};

struct bs_exec {
	struct bs_hdr h;
	__u32 old_tid; /* the thread that called execve (it becomes the leader) */
	__u32 _pad;
	char comm[BS_COMM_LEN];
};

struct bs_exit {
	struct bs_hdr h;
	__u32 exit_code;  /* task->exit_code: (status << 8) | signal */
	__u32 group_dead; /* 1 when the last thread of the process exits */
};

/*
 * An EXIT record this long (format 3 since bpfsight 0.9; older files' are a bs_exit) also says
 * the thread's whole time on a CPU: what a live view needs of a thread that was born and died
 * between two of its reads of /proc (a request thread of a few ms).
 */
struct bs_exit_cpu {
	struct bs_exit e;
	__u64 cpu_ns; /* task->se.sum_exec_runtime as it exits */
};

struct bs_comm {
	struct bs_hdr h;
	char comm[BS_COMM_LEN];
};

/*
 * A name learnt at record time for an address in a process: the host stub of a kernel
 * (cudaLaunchKernel's func) or a driver handle (CUfunction/CUkernel from cuModuleGetFunction
 * and friends). Written before the first record that needs it. hdr.pid = the process.
 */
struct bs_symbol {
	struct bs_hdr h;
	__u64 addr;
	__u32 name_id; /* bs_string id of the (demangled) name */
	__u32 kind;    /* BS_SYM_* */
};

#define BS_SYM_HOST_FUNC 1 /* a host-side function address (kernel stub) */
#define BS_SYM_HANDLE	 2 /* an opaque driver handle (CUfunction, CUkernel) */
/*
 * The file a uprobe-API family's functions were found in, mapped by the process (which BLAS,
 * which libcudart): addr = the family's record type (BS_REC_BLAS_CALL), below any address
 * a process can map; name = the file's path as the process's maps show it. Written once per
 * process and file, when a scan first finds the process mapping it.
 */
#define BS_SYM_LIBRARY 3

/*
 * New code may be mapped in a traced process: it exec'd (ino/dev = the executable), or the
 * dynamic linker announced a change of its link map (dlopen, the libraries loaded at start:
 * ld.so's _dl_debug_state, the hook debuggers use; ino/dev = 0). User space then looks for
 * probe sites in the files it has not examined yet. hdr.ts = the event.
 */
struct bs_map_exec {
	struct bs_hdr h;
	__u64 ino;
	__u32 dev;   /* kernel dev_t: major << 20 | minor */
	__u32 flags; /* BS_MAP_EXEC_* */
};

/*
 * A thread of a process in a pid namespace below the recorder's (a container, `unshare -p`)
 * and its id there, which is how that process's cupti-shim and CUPTI name it (hdr.tid is
 * ours). Written by the uprobe families at the thread's first traced call, so a GPU record
 * finds its launching call however late it is unpacked (docs/GPU.md, "Containers").
 */
struct bs_thread_ns {
	struct bs_hdr h;
	__u32 ns_tid; /* the id in the innermost namespace */
	__u32 level;  /* that namespace's depth below the initial one (>= 1) */
};

/*
 * A MAP_EXEC from exec is followed by the file name the program was started with
 * (linux_binprm's filename, NUL-terminated, at most BS_EXEC_PATH_LEN bytes): user space
 * examines that file even when the process has exited before it could read /proc/PID/exe.
 */
#define BS_EXEC_PATH_LEN 256

#define BS_MAP_EXEC_STOPPED 0x1 /* BPF sent SIGSTOP: user space probes, then sends SIGCONT */
#define BS_MAP_EXEC_EXEC    0x2 /* from exec */
#define BS_MAP_EXEC_DLOPEN  0x4 /* from the dynamic linker's hook */

/*
 * Records `bpfsight merge` writes (never a recorder). A merged file holds the records of many
 * files (the ranks of a job), one section per file in the order of its RANK records, each file
 * in a pid namespace of its own: a pid or tid P of the file with namespace NS is
 * NS << BS_RANK_NS_SHIFT | P (0 stays 0; NS 0 keeps its pids), so the processes of two hosts
 * never collide. Times are on one clock, the reference file's CLOCK_MONOTONIC.
 *
 * RANK: one per rank process of the file (at least one per file, pid 0 when it has none),
 * before the file's records. hdr.pid = the rank's process, ts = the file's start on the merged
 * clock, so that merged = ts + (t - mono0) + (t - mono0) * rate_ppb / 1e9 for a time t of the
 * file.
 */
#define BS_RANK_NS_SHIFT 22 /* Linux pids are below 2^22 (PID_MAX_LIMIT) */
#define BS_RANK_NS_MAX	 1024

#define BS_RANK_REFERENCE 0x1  /* the file whose clock the merged file uses */
#define BS_RANK_FINE	  0x2  /* aligned on its collectives (else on wall clocks only) */
#define BS_RANK_DRIFT	  0x4  /* its drift was fitted too */
#define BS_RANK_WALL_RATE 0x8  /* its wall-clock pairs (start and end) gave the clock's rate */
#define BS_RANK_INFERRED  0x10 /* sequences matched by time: the groups' creation was not seen */

struct bs_rank {
	struct bs_hdr h;
	__u32 ns;	 /* the file's pid namespace */
	__s32 rank;	 /* in its largest group (communicator), -1 = unknown */
	__s32 nranks;	 /* that group's size, -1 = unknown */
	__u32 host_id;	 /* string: the file's host name */
	__u32 path_id;	 /* string: the file, as merge was given it */
	__u32 boot_id;	 /* string: its boot id */
	__u32 flags;	 /* BS_RANK_* */
	__u32 points;	 /* sync points the fit used */
	__u64 group;	 /* that group's id (a communicator's unique-id hash), 0 = none */
	__s64 offset_ns; /* how far its wall clock was ahead of the reference's, at its points */
	__s64 drift_ppb; /* how much faster its wall clock ran than the reference's */
	__u64 residual_rms_ns; /* of its sync points' ends against the job's, after the fit */
	__u64 residual_max_ns;
	__u64 mono0;	     /* the file's start: CLOCK_MONOTONIC ... */
	__u64 real0;	     /* ... and CLOCK_REALTIME, from its header */
	__s64 rate_ppb;	     /* the merged clock's rate against the file's, less 1, in 1e-9 */
	__u64 offset_err_ns; /* the standard error of offset_ns */
};

/*
 * SYNC_BASE: the sync points (collectives) of GROUP in process hdr.pid count from BASE in the
 * merged file: its first one there is the group's BASE-th (its recording began after the group
 * was made). Without one, a process's sync points count from 0. Before the section's records.
 */
struct bs_sync_base {
	struct bs_hdr h;
	__u64 group;
	__u64 base;
};

#define BS_ASSERT_RECORD(t, sz)                                                                    \
	_Static_assert(sizeof(struct t) == (sz), #t " size is part of the format");                \
	_Static_assert(sizeof(struct t) % 8 == 0, #t " must be a multiple of 8 bytes")

BS_ASSERT_RECORD(bs_hdr, 24);
BS_ASSERT_RECORD(bs_string, 32);
BS_ASSERT_RECORD(bs_process, 64);
BS_ASSERT_RECORD(bs_thread, 40);
BS_ASSERT_RECORD(bs_thread_name, 32);
BS_ASSERT_RECORD(bs_loss, 40);
BS_ASSERT_RECORD(bs_fork, 48);
BS_ASSERT_RECORD(bs_exec, 48);
BS_ASSERT_RECORD(bs_thread_ns, 32);
BS_ASSERT_RECORD(bs_exit, 32);
BS_ASSERT_RECORD(bs_comm, 40);
BS_ASSERT_RECORD(bs_symbol, 40);
BS_ASSERT_RECORD(bs_map_exec, 40);
BS_ASSERT_RECORD(bs_rank, 128);
BS_ASSERT_RECORD(bs_sync_base, 40);

/* Stacks of any family's events: part of every recording's contract. */
#include "stack_records.h"
/* The hang trigger's snapshot of every thread of the job. */
#include "snap_records.h"

#endif /* BPFSIGHT_RECORDS_H */
