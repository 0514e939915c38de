/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gil family's records (block 0x50): bpf/gil.bpf.c writes them, user/families/gil/ reads
 * them (docs/GIL.md). Part of the record contract (records.h).
 */
#ifndef BPFSIGHT_GIL_RECORDS_H
#define BPFSIGHT_GIL_RECORDS_H

#include "records.h"

#define BS_REC_GIL_WAIT	  0x50 /* one wait for the GIL at or above the threshold */
#define BS_REC_GIL_HOLD	  0x51 /* (full mode): one hold of the GIL at or above it */
#define BS_REC_GIL_AGG	  0x52 /* cumulative per-thread totals of every wait and hold */
#define BS_REC_GIL_BLAME  0x53 /* cumulative wait time per (waiter, holder) thread pair */
#define BS_REC_GIL_PROC	  0x54 /* how one python process is measured (user space) */
#define BS_REC_GIL_HOLDER 0x55 /* (--stacks=gil): a round of a wait, the holder's code */
#define BS_REC_GIL_SAMPLE 0x56 /* (--stacks=gil): a timer sample of a holder others waited for */

/*
 * One wait for the GIL that lasted at least the threshold. hdr.tid = the waiter, hdr.ts = when
 * it began to block (default mode) or entered take_gil (full mode).
 */
struct bs_gil_wait {
	struct bs_hdr h;
	__u64 dur;
	__u32 holder_tid; /* the thread holding the GIL when the wait began (0 = unknown) */
	__u16 rounds;	  /* timed condition waits it took (saturates at 65535) */
	__u16 flags;	  /* BS_GIL_WAIT_* */
};

/*
 * --stacks=gil: one round of a GIL wait (a timed condition wait) of at least the threshold,
 * hdr.tid = the waiter, hdr.ts = the round's start; its STACK_REF (same tid, ts) is the
 * holder's Python stack read when the round began. covered_us: the part of the round that
 * the holders' timer samples (bs_gil_sample) stand for; the rest, dur - covered, is blamed on
 * that stack (a holder asleep with the GIL, in a blocking call: no sample can read it). All
 * of it when the holder was running or waiting for a CPU as the round began.
 */
struct bs_gil_holder {
	struct bs_hdr h;
	__u64 dur;
	__u32 holder_tid;
	__u32 covered_us; /* saturates; 0 in files before the holder sampler */
};

/*
 * --stacks=gil: the GIL's holder hdr.tid, on its CPU at hdr.ts while `waiters` threads of its
 * process waited for the GIL; its STACK_REF (same tid, ts) is the holder's innermost Python
 * frames then. dur = the sampler's period times the waiters: the waiting it stands for.
 */
struct bs_gil_sample {
	struct bs_hdr h;
	__u64 dur;
	__u32 waiters;
	__u32 period_us;
};

#define BS_GIL_WAIT_MUTEX    0x1 /* it began blocked on the GIL's mutex */
#define BS_GIL_WAIT_TAKE_GIL 0x2 /* timed from take_gil's entry to its return (full mode) */
#define BS_GIL_WAIT_HANDOFF  0x4 /* the holder changed meanwhile: BLAME splits the time */
/*
 * Still waiting when a flight-recorder dump was cut (ts its start, dur its time until the cut):
 * a bs_gil_wait_open, which says the part of it not yet blamed on a holder (docs/FORMAT.md).
 */
#define BS_GIL_WAIT_OPEN 0x8

/* A wait's ended segments kept by holder until it ends (gil.bpf.c's gil_thr). */
#define BS_GIL_PEND 4

/*
 * A GIL wait open at a dump's cut: the wait (flags BS_GIL_WAIT_OPEN, holder_tid the holder
 * when it began), its current segment, [seg_start, ts + dur) blamed on seg_holder, and its
 * ended ones by holder (pend_*; count 0: none): no BLAME record holds any part of an open
 * wait (a wait is blamed when it ends), so the dump's blame has it from this record alone.
 */
struct bs_gil_wait_open {
	struct bs_gil_wait w;
	__u64 seg_start;
	__u32 seg_holder;
	__u32 _pad;
	__u64 pend_ns[BS_GIL_PEND];
	__u32 pend_holder[BS_GIL_PEND];
	__u16 pend_count[BS_GIL_PEND];
};

/* Full mode: hdr.tid held the GIL from hdr.ts (take_gil returned) for dur (drop_gil). */
struct bs_gil_hold {
	struct bs_hdr h;
	__u64 dur;
};

/*
 * The bpf_cookie of gil_exit's probes: which function returned. One program for the three
 * returns, so that the verifier checks its stack walk (wait_end's) once, not three times.
 */
#define BS_GIL_EXIT_COND  1 /* glibc's pthread_cond_timedwait */
#define BS_GIL_EXIT_MUTEX 2 /* glibc's __lll_lock_wait, on the GIL's mutex */
#define BS_GIL_EXIT_TAKE  3 /* the interpreter's take_gil (full mode) */

#define BS_GIL_HIST 32 /* log2 buckets: i holds [2^i, 2^(i+1)) ns, 0 also 0 ns, 31 the rest */

/* Per-thread totals of every wait and hold, short or long (BPF map value). */
struct bs_gil_agg_val {
	__u64 wait_count;
	__u64 wait_total_ns;
	__u64 wait_max_ns;
	__u64 hold_count; /* full mode */
	__u64 hold_total_ns;
	__u64 hold_max_ns;
	__u64 short_hist[BS_GIL_HIST]; /* waits under the threshold (no WAIT record) by duration */
};

/*
 * Cumulative snapshot of a thread's bs_gil_agg_val, written whenever it changed; a reader keeps
 * the last one per (pid, tid). hdr.ts = snapshot time.
 */
struct bs_gil_agg {
	struct bs_hdr h;
	__u64 threshold_ns; /* waits and holds from this long on also have their own record */
	struct bs_gil_agg_val v;
};

/* Wait time of hdr.tid blamed on holder_tid (cumulative, last snapshot per key counts). */
struct bs_gil_blame {
	struct bs_hdr h;
	__u32 holder_tid; /* 0 = unknown */
	__u32 _pad;
	__u64 count; /* wait segments: a wait during which the holder changed counts for each */
	__u64 total_ns;
};

struct bs_gil_blame_key {
	__u32 pid;
	__u32 waiter;
	__u32 holder;
	__u32 _pad;
};

struct bs_gil_blame_val {
	__u64 count;
	__u64 total_ns;
};

/* What user space found in a python process, written on discovery and on every change. */
struct bs_gil_proc {
	struct bs_hdr h;  /* pid = the process */
	__u64 gil_addr;	  /* struct _gil_runtime_state in the process (0 = none) */
	__u32 py_version; /* PY_VERSION_HEX (0 = unknown) */
	__u32 method;	  /* BS_GIL_METHOD_* */
	__u32 flags;	  /* BS_GIL_PROC_* */
	__u32 object_id;  /* bs_string: the ELF file holding the interpreter */
	__u32 note_id;	  /* bs_string: what the method cannot see, or why none applies */
	__u32 _pad;
};

#define BS_GIL_METHOD_NONE     0 /* not measured: note_id says why */
#define BS_GIL_METHOD_CONDWAIT 1 /* the GIL's condition wait (+ its mutex when probed) */
#define BS_GIL_METHOD_TAKE_GIL 2 /* full mode: take_gil/drop_gil */
#define BS_GIL_METHOD_NO_GIL   3 /* free-threaded build running without the GIL */

#define BS_GIL_PROC_FREE_THREADED 0x1 /* a free-threaded (3.13t+) build */
#define BS_GIL_PROC_MUTEX	  0x2 /* waits on the GIL's mutex are seen too */
#define BS_GIL_PROC_HOLDER	  0x4 /* holder threads are known (thread-state -> tid) */
#define BS_GIL_PROC_VERIFIED	  0x8 /* the layout was checked against the live interpreter */

/* BPF map value, per process: where its GIL is, and how to read a thread state's tid. */
struct bs_gil_cfg {
	__u64 cond;	       /* &gil->cond: the only condition variable that counts */
	__u64 mutex;	       /* &gil->mutex (its futex word is at offset 0) */
	__u64 locked;	       /* &gil->locked (int) */
	__u64 holder;	       /* &gil->last_holder (PyThreadState *) */
	__u32 tid_off;	       /* PyThreadState: native_thread_id, or thread_id (pthread_t) */
	__u32 pthread_tid_off; /* 0: tid_off is native_thread_id; else tid's offset in pthread */
	__u32 flags;	       /* BS_GIL_CFG_* */
	__u32 _pad;
};

#define BS_GIL_CFG_MUTEX 0x1 /* count waits on the mutex (needs the holder's tid) */
#define BS_GIL_CFG_FULL	 0x2 /* take_gil/drop_gil are probed in this process */
#define BS_GIL_CFG_OFF	 0x4 /* known python without a GIL to watch (free-threaded) */

BS_ASSERT_RECORD(bs_gil_wait, 40);
BS_ASSERT_RECORD(bs_gil_wait_open, 112);
BS_ASSERT_RECORD(bs_gil_holder, 40);
BS_ASSERT_RECORD(bs_gil_sample, 40);
BS_ASSERT_RECORD(bs_gil_hold, 32);
BS_ASSERT_RECORD(bs_gil_agg_val, 304);
BS_ASSERT_RECORD(bs_gil_agg, 336);
BS_ASSERT_RECORD(bs_gil_blame, 48);
BS_ASSERT_RECORD(bs_gil_blame_key, 16);
BS_ASSERT_RECORD(bs_gil_blame_val, 16);
BS_ASSERT_RECORD(bs_gil_proc, 56);
BS_ASSERT_RECORD(bs_gil_cfg, 48);

#endif /* BPFSIGHT_GIL_RECORDS_H */
