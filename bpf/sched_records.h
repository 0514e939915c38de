/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sched family's records (block 0x20): bpf/sched.bpf.c writes them, user/families/sched/
 * reads them. Part of the record contract (records.h).
 */
#ifndef BPFSIGHT_SCHED_RECORDS_H
#define BPFSIGHT_SCHED_RECORDS_H

#include "records.h"

#define BS_REC_OFFCPU 0x20 /* one off-CPU interval of a thread */
#define BS_REC_CLOCK_SKEW                                                                          \
	0x21 /* what a thread's schedstat adds as ready to run, beyond the truth */

/* Context switches of a traced thread that no sched program saw (a loss cause, records.h). */
#define BS_LOSS_SCHED 7

/*
 * The helper id sched_switch_tw_btf calls bpf_task_work_schedule_resume_impl by, which user
 * space rewrites into that kfunc's call before loading it (bpf/sched.bpf.c says why).
 */
#define BS_SCHED_TASK_WORK_CALL 0x7b5c0001

/*
 * sched: one off-CPU interval. hdr.ts = switch-out, hdr.cpu = the CPU it left.
 * Blocked time = dur - runnable_ns; runnable_ns = from wakeup (or preemption) to switch-in.
 */
/* state of a thread's last switch-out, as it exits (the kernel's TASK_DEAD): dur 0, oncpu_ns its
 * last run slice. */
#define BS_SCHED_DEAD 0x80
struct bs_offcpu {
	struct bs_hdr h;
	__u64 dur;
	__u64 runnable_ns;
	__u64 oncpu_ns;	 /* the run slice that ended at hdr.ts (0 if it began before tracing) */
	__u32 state;	 /* prev_state at switch-out: 0 = preempted, else TASK_* bits */
	__u32 waker_tid; /* who woke it (0 = preempted or not seen) */
};

BS_ASSERT_RECORD(bs_offcpu, 56);

/*
 * sched: at a switch-in, the kernel's schedstat adds to the thread's time ready to run
 * (sched_info.run_delay) more than the wait since its wakeup: 6.12+'s delayed dequeue keeps a
 * thread that blocked with negative lag queued a while, moving it to another CPU then stamps
 * it queued, and its final dequeue leaves the stamp, so the sleep since counts as a wait for
 * a CPU. hdr.ts = the switch-in; extra_ns = what is added beyond the wait from the wakeup
 * (written when over 1 ms), kernel_ns = all it adds. The ledger's check of a thread's
 * timeline against its own clock takes it out (docs/USAGE.md, the ledger report).
 */
struct bs_clock_skew {
	struct bs_hdr h;
	__u64 extra_ns;
	__u64 kernel_ns;
};

BS_ASSERT_RECORD(bs_clock_skew, 40);

#endif /* BPFSIGHT_SCHED_RECORDS_H */
