/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The record contract between BPF programs and user space (ring-buffer version 1).
 *
 * Every record starts with struct bs_hdr; the consumer switches on hdr.type and checks
 * hdr.size against the type's minimum before trusting a field. Records are made of
 * fixed-width fields only, padded explicitly to a multiple of 8 bytes: the on-disk encoding
 * (docs/FORMAT.md) treats every record as an array of little-endian 64-bit words.
 *
 * Type numbers are allocated in blocks of 16 per family so that a new family only ever adds
 * lines inside its own block, and every type fits in one varint byte on disk.
 */
#ifndef BPFSIGHT_RECORDS_H
#define BPFSIGHT_RECORDS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BS_RB_VERSION 1
#define BS_COMM_LEN   16

/* Record types. Values are part of the file format: never renumber. */
#define BS_REC_STRING	    0x01 /* interned string (user space) */
#define BS_REC_PROCESS	    0x02 /* process metadata snapshot (user space) */
#define BS_REC_THREAD	    0x03 /* thread metadata snapshot (user space) */
#define BS_REC_LOSS	    0x04 /* events lost since the previous loss record of the cause */
#define BS_REC_FORK	    0x05 /* new process or thread (BPF, always on) */
#define BS_REC_EXEC	    0x06 /* successful execve (BPF, always on) */
#define BS_REC_EXIT	    0x07 /* thread exit (BPF, always on) */
#define BS_REC_COMM	    0x08 /* thread renamed (BPF, always on) */
#define BS_REC_SYSCALL	    0x10 /* osrt: one system call at or above the threshold */
#define BS_REC_SYSCALL_AGG  0x11 /* osrt: cumulative in-kernel aggregate per thread+syscall */
#define BS_REC_OFFCPU	    0x20 /* sched: one off-CPU interval of a thread */
#define BS_REC_TYPE_MAX	    0x100 /* exclusive bound a reader accepts in this version */

/* Loss causes (BS_REC_LOSS.cause and the index of the `lost` BPF array). */
#define BS_LOSS_RINGBUF_FULL 0 /* bpf_ringbuf_reserve failed: consumer too slow */
#define BS_LOSS_TASK_MAP     1 /* per-thread state map full: an interval could not be timed */
#define BS_LOSS_AGG_MAP	     2 /* aggregate map full: short calls not counted */
#define BS_LOSS_TARGET_MAP   3 /* target map full: a child process is not followed */
#define BS_LOSS_ATTACH	     4 /* a probe failed to attach (count = probes) */
#define BS_LOSS_WRITE	     5 /* user space could not write a chunk */
#define BS_LOSS_NR	     6

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

struct bs_loss {
	struct bs_hdr h; /* ts = when user space noticed */
	__u32 cause;	 /* BS_LOSS_* */
	__u32 _pad;
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
	__u32 exit_code; /* task->exit_code: (status << 8) | signal */
	__u32 group_dead; /* 1 when the last thread of the process exits */
};

struct bs_comm {
	struct bs_hdr h;
	char comm[BS_COMM_LEN];
};

/* osrt: hdr.ts = syscall entry. */
struct bs_syscall {
	struct bs_hdr h;
	__u64 dur;
	__s64 ret;
	__u32 nr;
	__u32 _pad;
};

/*
 * osrt: calls shorter than the threshold, summed in the kernel. Cumulative since recording
 * started; user space writes a new snapshot of a key whenever it changed, a reader keeps the
 * last one per (pid, tid, nr). hdr.ts = snapshot time.
 */
struct bs_syscall_agg {
	struct bs_hdr h;
	__u32 nr;
	__u32 _pad;
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
};

/*
 * sched: one off-CPU interval. hdr.ts = switch-out, hdr.cpu = the CPU it left.
 * Blocked time = dur - runnable_ns; runnable_ns = from wakeup (or preemption) to switch-in.
 */
struct bs_offcpu {
	struct bs_hdr h;
	__u64 dur;
	__u64 runnable_ns;
	__u64 oncpu_ns; /* the run slice that ended at hdr.ts (0 if it began before tracing) */
	__u32 state;	/* prev_state at switch-out: 0 = preempted, else TASK_* bits */
	__u32 waker_tid; /* who woke it (0 = preempted or not seen) */
};

/* Keys and values of BPF maps that user space reads. */
struct bs_syscall_agg_key {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 _pad;
};

struct bs_syscall_agg_val {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
};

#define BS_ASSERT_RECORD(t, sz)                                                                    \
	_Static_assert(sizeof(struct t) == (sz), #t " size is part of the format");              \
	_Static_assert(sizeof(struct t) % 8 == 0, #t " must be a multiple of 8 bytes")

BS_ASSERT_RECORD(bs_hdr, 24);
BS_ASSERT_RECORD(bs_string, 32);
BS_ASSERT_RECORD(bs_process, 64);
BS_ASSERT_RECORD(bs_thread, 40);
BS_ASSERT_RECORD(bs_loss, 40);
BS_ASSERT_RECORD(bs_fork, 48);
BS_ASSERT_RECORD(bs_exec, 48);
BS_ASSERT_RECORD(bs_exit, 32);
BS_ASSERT_RECORD(bs_comm, 40);
BS_ASSERT_RECORD(bs_syscall, 48);
BS_ASSERT_RECORD(bs_syscall_agg, 64);
BS_ASSERT_RECORD(bs_offcpu, 56);
BS_ASSERT_RECORD(bs_syscall_agg_key, 16);
BS_ASSERT_RECORD(bs_syscall_agg_val, 32);

#endif /* BPFSIGHT_RECORDS_H */
