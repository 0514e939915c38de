/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The osrt family's records (block 0x10): bpf/osrt.bpf.c writes them, user/families/osrt/
 * reads them. Part of the record contract (records.h).
 */
#ifndef BPFSIGHT_OSRT_RECORDS_H
#define BPFSIGHT_OSRT_RECORDS_H

#include "records.h"

#define BS_REC_SYSCALL	   0x10 /* one system call at or above the threshold */
#define BS_REC_SYSCALL_AGG 0x11 /* cumulative in-kernel aggregate per thread+syscall */

/* --osrt-mode blocked: a sleep whose switch-out or switch-in no program saw (not timed). */
#define BS_LOSS_OSRT_MISSED 0x10

/*
 * x86-64's uretprobe(2) (Linux 6.11): the trampoline of every return probe calls it, ours
 * (cuda, nccl, gil) and other tracers'. It is the probes' cost, not the application's: osrt
 * does not record it, and osrt_sum leaves out what older traces hold (docs/USAGE.md, osrt).
 */
#define BS_NR_URETPROBE_X86_64 335

/* osrt: hdr.ts = syscall entry (for a call entered before a -p/-a start, when its thread went
 * off its CPU: the start's iterator, bpf/osrt.bpf.c). */
struct bs_syscall {
	struct bs_hdr h;
	__u64 dur;
	__s64 ret;
	__u32 nr;
	__u32 flags; /* BS_SYSCALL_*; 0 in a returned call's record (and in files before it) */
};

/* Still in flight when the recording stopped (the stop's iterator): dur ends at the stop, RET
 * unknown (0). */
#define BS_SYSCALL_OPEN 0x1
/*
 * --osrt-mode blocked: the time the call spent asleep, from its thread's switch-out to its
 * switch-in (hdr.ts = the switch-out); RET unknown (0). One record per sleep of the call.
 */
#define BS_SYSCALL_BLOCKED 0x2

/*
 * osrt: calls shorter than the threshold, summed in the kernel. Cumulative since recording
 * started; user space writes a new snapshot of a key whenever it changed, a reader keeps the
 * last one per (pid, tid, nr). hdr.ts = snapshot time. A snapshot with BS_AGG_FINAL closes
 * the key: the thread exited (or the idle entry was evicted), a reader adds it to its totals
 * and a later snapshot of the same key (a recycled tid) counts from zero.
 */
#define BS_AGG_FINAL   1
#define BS_AGG_BLOCKED 2 /* --osrt-mode blocked: the sleeps inside calls, not the calls */
struct bs_syscall_agg {
	struct bs_hdr h;
	__u32 nr;
	__u32 flags; /* BS_AGG_* */
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
};

/* The in-kernel aggregates' map (user space reads it: user/families/osrt/osrt.c). */
struct bs_syscall_agg_key {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 gen; /* low bits of the thread's start time: a recycled tid gets new keys */
};

struct bs_syscall_agg_val {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
};

BS_ASSERT_RECORD(bs_syscall, 48);
BS_ASSERT_RECORD(bs_syscall_agg, 64);
BS_ASSERT_RECORD(bs_syscall_agg_key, 16);
BS_ASSERT_RECORD(bs_syscall_agg_val, 32);

#endif /* BPFSIGHT_OSRT_RECORDS_H */
