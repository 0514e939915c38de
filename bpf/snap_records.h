/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Snapshots of a job's threads, read as `bpfsight stacks` reads them (user/stacks/snap.h):
 * every thread of every process, where it is and what it waits for. Taken by the hang trigger
 * (`--trigger hang:DUR`, user/flight/flight_hang.h) at the moment it fired, written into the
 * flight window just before the dump, after the calls still in flight (bs_ucall with
 * BS_UCALL_OPEN); and at a recording's edges (user/session/recorder_edges.c): at its start
 * (attached with -p) and at its end, the threads' THREAD_SNAP flagged BS_SNAP_AT_START or
 * BS_SNAP_AT_END, so that what was open when the recording began or ended is known (a read
 * that never returned, a collective entered before the probes). User space writes them;
 * included by records.h: part of every recording's contract. Type numbers are in the 0xa0
 * block (the recording's own block is full).
 */
#ifndef BPFSIGHT_SNAP_RECORDS_H
#define BPFSIGHT_SNAP_RECORDS_H

#include "records.h"

#define BS_REC_PROC_SNAP   0xa3 /* a process of the job, as the snapshot read it */
#define BS_REC_THREAD_SNAP 0xa4 /* one of its threads, after its PROC_SNAP */

/* hdr.pid = the process, tid = its main thread, ts = when its threads were first looked at. */
struct bs_proc_snap {
	struct bs_hdr h;
	__s32 env_rank;	      /* RANK in its environment (torchrun, mpirun...), -1 = none */
	__s32 env_local_rank; /* LOCAL_RANK, -1 = none */
	__s32 env_world;      /* WORLD_SIZE, -1 = none */
	__u32 nthreads;	      /* its threads (a THREAD_SNAP each) */
	__u16 python_minor;   /* 3.MINOR whose Python frames were read, 0 = none */
	__u16 edge; /* BS_SNAP_AT_START or _AT_END: a recording's edge; _NOW: top's; 0: a trigger's */
	__u32 error_id; /* string: why it could not be read at all, 0 = it was */
	__u64 took_ns;	/* from the first look at its threads to the last stack read */
};

/*
 * One thread: its state, the system call it is in, how long it has been off its CPU, its
 * stack and the GIL. hdr.pid/tid = the thread, ts = its process's PROC_SNAP ts.
 */
struct bs_thread_snap {
	struct bs_hdr h;
	__u32 stack_id; /* STACK record, 0 = none (error_id says why) */
	__u32 state;	/* task->__state: 0 running or runnable, else TASK_* (1 sleeping, 2 disk) */
	__s32 syscall;	/* the system call it sleeps in (x86-64 numbers), -1 = none */
	__u32 flags;	/* BS_SNAP_* */
	__u64 off_cpu_ns; /* how long it had been off its CPU (asleep since ts less this), 0 = runs */
	__u64 arg0;	  /* that call's first argument: a futex's address */
	__u64 cpu_ns;	  /* its CPU time so far */
	__u32 error_id;	  /* string: why it has no stack, 0 = it has one */
	__u32 _pad;
};

#define BS_SNAP_RUNNING	  0x1  /* on a CPU (or sampled running): STATE is not where it waits */
#define BS_SNAP_SAMPLED	  0x2  /* its stack was read at an interrupt while it ran */
#define BS_SNAP_IN_KERNEL 0x4  /* ... and it was in the kernel then */
#define BS_SNAP_GIL	  0x8  /* it holds its interpreter's GIL */
#define BS_SNAP_GIL_WAIT  0x10 /* asleep on the GIL's own futex: waiting for the GIL */
#define BS_SNAP_EXITING	  0x20 /* it is exiting */
#define BS_SNAP_AT_START  0x40 /* read when the recording began (its edge), not at a trigger */
#define BS_SNAP_AT_END	  0x80 /* read when the recording ended */
#define BS_SNAP_EDGES	  (BS_SNAP_AT_START | BS_SNAP_AT_END)
/* Read for a live view (top -p, each refresh): never in a file, readers skip it. */
#define BS_SNAP_NOW 0x100
/*
 * Asleep with a stale queue stamp (snap_task.queue_stale): its schedstat (run_delay_ns) will
 * count part of this sleep as time ready to run; the ledger checks no wait against it.
 */
#define BS_SNAP_CLOCK_STALE 0x200

/*
 * A THREAD_SNAP this long (since bpfsight 0.16; older files' are a bs_thread_snap) also says
 * the thread's time ready to run without a CPU so far, as its schedstat does: with cpu_ns, the
 * thread's own clocks at the recording's edges, which the ledger's account of it is checked
 * against (the ledger_check report).
 */
struct bs_thread_snap_clock {
	struct bs_thread_snap s;
	__u64 run_delay_ns;
};

BS_ASSERT_RECORD(bs_proc_snap, 56);
BS_ASSERT_RECORD(bs_thread_snap, 72);
BS_ASSERT_RECORD(bs_thread_snap_clock, 80);

#endif /* BPFSIGHT_SNAP_RECORDS_H */
