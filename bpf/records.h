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
#define BS_REC_STRING	   0x01 /* interned string (user space) */
#define BS_REC_PROCESS	   0x02 /* process metadata snapshot (user space) */
#define BS_REC_THREAD	   0x03 /* thread metadata snapshot (user space) */
#define BS_REC_LOSS	   0x04 /* events lost since the previous loss record of the cause */
#define BS_REC_FORK	   0x05 /* new process or thread (BPF, always on) */
#define BS_REC_EXEC	   0x06 /* successful execve (BPF, always on) */
#define BS_REC_EXIT	   0x07 /* thread exit (BPF, always on) */
#define BS_REC_COMM	   0x08 /* thread renamed (BPF, always on) */
#define BS_REC_SYMBOL	   0x09 /* name of a code address or handle in a process (user space) */
#define BS_REC_MAP_EXEC	   0x0a /* new code may be mapped: exec, dlopen (BPF; uprobe discovery) */
#define BS_REC_SYSCALL	   0x10 /* osrt: one system call at or above the threshold */
#define BS_REC_SYSCALL_AGG 0x11 /* osrt: cumulative in-kernel aggregate per thread+syscall */
#define BS_REC_OFFCPU	   0x20 /* sched: one off-CPU interval of a thread */
#define BS_REC_CUDA_CALL   0x30 /* cuda: one runtime or driver API call (struct bs_ucall) */
#define BS_REC_NCCL_CALL   0x40 /* nccl: one API call (struct bs_ucall) */
/* 0x50-0x5f: gil family (see its block below) */
#define BS_REC_GIL_WAIT	  0x50 /* gil: one wait for the GIL at or above the threshold */
#define BS_REC_GIL_HOLD	  0x51 /* gil (full mode): one hold of the GIL at or above it */
#define BS_REC_GIL_AGG	  0x52 /* gil: cumulative per-thread totals of every wait and hold */
#define BS_REC_GIL_BLAME  0x53 /* gil: cumulative wait time per (waiter, holder) thread pair */
#define BS_REC_GIL_PROC	  0x54 /* gil: how one python process is measured (user space) */
#define BS_REC_GIL_HOLDER 0x55 /* gil (--stacks=gil): a round of a wait, the holder's code */
/* 0x60-0x6f: gpu family and the cupti-shim channel, 0x70-0x7f: nvtx (blocks below) */
#define BS_REC_TYPE_MAX 0x100 /* exclusive bound a reader accepts in this version */

/* Loss causes (BS_REC_LOSS.cause and the index of the `lost` BPF array). */
#define BS_LOSS_RINGBUF_FULL 0 /* bpf_ringbuf_reserve failed: consumer too slow */
#define BS_LOSS_TASK_MAP     1 /* per-thread state map full: an interval could not be timed */
#define BS_LOSS_AGG_MAP	     2 /* aggregate map full: short calls not counted */
#define BS_LOSS_TARGET_MAP   3 /* target map full: a child process is not followed */
#define BS_LOSS_ATTACH	     4 /* a probe failed to attach (count = probes) */
#define BS_LOSS_WRITE	     5 /* user space could not write a chunk */
#define BS_LOSS_SHIM	     6 /* records the cupti-shim or CUPTI dropped (buffers full) */
#define BS_LOSS_SCHED	     7 /* context switches of a traced thread no sched program saw */
#define BS_LOSS_FLIGHT	     8 /* flight recorder: records of the window its SIZE could not hold */
#define BS_LOSS_STACK	     9 /* a stack not taken: a program it interrupted was taking one */
#define BS_LOSS_NR	     10

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
	__u32 exit_code;  /* task->exit_code: (status << 8) | signal */
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
 * last one per (pid, tid, nr). hdr.ts = snapshot time. A snapshot with BS_AGG_FINAL closes
 * the key: the thread exited (or the idle entry was evicted), a reader adds it to its totals
 * and a later snapshot of the same key (a recycled tid) counts from zero.
 */
#define BS_AGG_FINAL 1
struct bs_syscall_agg {
	struct bs_hdr h;
	__u32 nr;
	__u32 flags; /* BS_AGG_* */
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
	__u64 oncpu_ns;	 /* the run slice that ended at hdr.ts (0 if it began before tracing) */
	__u32 state;	 /* prev_state at switch-out: 0 = preempted, else TASK_* bits */
	__u32 waker_tid; /* who woke it (0 = preempted or not seen) */
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
 * A MAP_EXEC from exec is followed by the file name the program was started with
 * (linux_binprm's filename, NUL-terminated, at most BS_EXEC_PATH_LEN bytes): user space
 * examines that file even when the process has exited before it could read /proc/PID/exe.
 */
#define BS_EXEC_PATH_LEN 256

#define BS_MAP_EXEC_STOPPED 0x1 /* BPF sent SIGSTOP: user space probes, then sends SIGCONT */
#define BS_MAP_EXEC_EXEC    0x2 /* from exec */
#define BS_MAP_EXEC_DLOPEN  0x4 /* from the dynamic linker's hook */

/*
 * One call of a probed user-space API function (cuda, nccl): the generic uprobe programs of
 * bpf/ucall.bpf.h. hdr.ts = entry, written at return. What is captured per function comes
 * from the probe's bpf_cookie (BS_UCOOKIE below), which user space compiles from the
 * argument spec of the function's entry in the family's API table (user/ucall/ucall_spec.h); the
 * entry's index is `fn`.
 */
#define BS_UCALL_NARGS	      12  /* rdi rsi rdx rcx r8 r9, then 6 stack words */
#define BS_UCALL_DEREF_STRUCT 192 /* bytes copied for BS_DEREF_STRUCT */
#define BS_UCALL_DEREF_STRING 512 /* bytes reserved for BS_DEREF_STRING (NUL-terminated) */

struct bs_ucall {
	struct bs_hdr h;
	__u64 dur;
	__s64 ret;	 /* rax at return */
	__u64 out;	 /* the u64 *args[out_arg] points to, read at return (0 = none/fault) */
	__u32 fn;	 /* index in the family's API table: part of the file format */
	__u16 depth;	 /* calls of the same family enclosing this one on this thread */
	__u16 deref_len; /* bytes that follow the struct: 0, BS_UCALL_DEREF_STRUCT or _STRING */
	__u64 args[BS_UCALL_NARGS];
	/* __u8 deref[deref_len]: read at return from (char *)args[deref_arg] + deref_off;
	 * zero-filled when the read faults. */
};

/*
 * bpf_cookie of a ucall probe (both the entry and the return probe carry it):
 *   bits  0-11 fn       index in the family's API table
 *   bits 12-15 deref    argument index + 1 whose pointee is copied at return (0 = none;
 *                       BS_DEREF_ARG_STACK = the caller's stack-argument area, for a large
 *                       struct passed by value, e.g. ncclUniqueId)
 *   bits 16-23 off8     byte offset / 8 into that pointee
 *   bits 24-25 mode     BS_DEREF_*
 *   bits 26-29 out      argument index + 1 whose u64 pointee is read at return (0 = none)
 *   bit  30    stack    the function takes more than 6 argument words: copy the stack ones
 */
#define BS_DEREF_ARG_STACK 15
#define BS_DEREF_NONE	   0
#define BS_DEREF_STRUCT	   1
#define BS_DEREF_STRING	   2

#define BS_UCOOKIE(fn, deref_arg1, off8, mode, out_arg1)                                           \
	((__u64)(fn) | (__u64)(deref_arg1) << 12 | (__u64)(off8) << 16 | (__u64)(mode) << 24 |     \
	 (__u64)(out_arg1) << 26)
#define BS_UCOOKIE_STACK	(1ull << 30)
#define BS_UCOOKIE_FN(c)	((__u32)(c)&0xfff)
#define BS_UCOOKIE_DEREF_ARG(c) (((__u32)(c) >> 12) & 0xf)
#define BS_UCOOKIE_DEREF_OFF(c) ((((__u32)(c) >> 16) & 0xff) * 8)
#define BS_UCOOKIE_MODE(c)	(((__u32)(c) >> 24) & 0x3)
#define BS_UCOOKIE_OUT_ARG(c)	(((__u32)(c) >> 26) & 0xf)

/* Keys and values of BPF maps that user space reads. */
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

#define BS_ASSERT_RECORD(t, sz)                                                                    \
	_Static_assert(sizeof(struct t) == (sz), #t " size is part of the format");                \
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
BS_ASSERT_RECORD(bs_symbol, 40);
BS_ASSERT_RECORD(bs_map_exec, 40);
BS_ASSERT_RECORD(bs_ucall, 152);
BS_ASSERT_RECORD(bs_syscall_agg_key, 16);
BS_ASSERT_RECORD(bs_syscall_agg_val, 32);

/* ---- gil family: bpf/gil.bpf.c, user/families/gil/, docs/GIL.md ---- */

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
 * holder's Python stack read when the round ended (what the holder was running then).
 */
struct bs_gil_holder {
	struct bs_hdr h;
	__u64 dur;
	__u32 holder_tid;
	__u32 _pad;
};

#define BS_GIL_WAIT_MUTEX    0x1 /* it began blocked on the GIL's mutex */
#define BS_GIL_WAIT_TAKE_GIL 0x2 /* timed from take_gil's entry to its return (full mode) */
#define BS_GIL_WAIT_HANDOFF  0x4 /* the holder changed meanwhile: BLAME splits the time */

/* Full mode: hdr.tid held the GIL from hdr.ts (take_gil returned) for dur (drop_gil). */
struct bs_gil_hold {
	struct bs_hdr h;
	__u64 dur;
};

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
BS_ASSERT_RECORD(bs_gil_holder, 40);
BS_ASSERT_RECORD(bs_gil_hold, 32);
BS_ASSERT_RECORD(bs_gil_agg_val, 304);
BS_ASSERT_RECORD(bs_gil_agg, 336);
BS_ASSERT_RECORD(bs_gil_blame, 48);
BS_ASSERT_RECORD(bs_gil_blame_key, 16);
BS_ASSERT_RECORD(bs_gil_blame_val, 16);
BS_ASSERT_RECORD(bs_gil_proc, 56);
BS_ASSERT_RECORD(bs_gil_cfg, 48);
/* ---- end of the gil family ---- */

/*
 * ---- cupti-shim channel, gpu and nvtx families: cupti-shim/, bpf/shim.bpf.c, user/shim_channel/shim_*.c,
 * user/families/gpu/, user/families/nvtx/, docs/GPU.md ----
 *
 * The shim (loaded into the application by CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH)
 * writes the records below into per-thread buffers in its own memory and hands each full (or
 * timed-out) buffer to BPF through the USDT probe bpfsight:batch(buf, bytes). BPF copies the
 * buffer into one SHIM_BATCH ring record; user space unpacks it and writes every record inside
 * to the trace as an ordinary record: hdr.pid replaced by the pid BPF saw, hdr.cpu = 0,
 * string ids translated from the shim's (per process) to the file's (see BS_REC_STRING below).
 *
 * USDT probes of provider "bpfsight" (sys/sdt.h, each with a semaphore; a tracer attaching a
 * probe bumps its semaphore in the process, which is how the shim learns what is wanted):
 *   batch(void *buf, u64 bytes)  data channel; semaphore > 0 = a tracer is attached
 *   gpu(u32 state)    semaphore: GPU activity wanted; fired when the shim's state changes
 *   nvtx(u32 state)   semaphore: NVTX ranges wanted; fired when the shim's state changes
 *   sync(u32 zero)    semaphore: send NVTX_BEGIN records at once (--capture-range=nvtx)
 *   drain(u64 seq)    semaphore: flush everything now; fired once flushed, seq = last batch
 *
 * Inside a batch the shim also writes BS_REC_STRING records (struct bs_string, id = the
 * shim's own id, unique per process) before the first record that refers to the id; user space
 * re-interns the text and rewrites the id fields marked "string" below. A shim re-sends every
 * string it uses after each new attach (ids stay the same within a process).
 */
#define BS_REC_SHIM_BATCH  0x60 /* ring only: one batch of shim records (never on disk) */
#define BS_REC_SHIM_STATUS 0x61 /* the shim's state changed, or it reports an error or drops */
#define BS_REC_GPU_KERNEL  0x62 /* one kernel execution (CUPTI CONCURRENT_KERNEL) */
#define BS_REC_GPU_MEMCPY  0x63 /* one copy on the GPU (CUPTI MEMCPY, MEMCPY2 peer) */
#define BS_REC_GPU_MEMSET  0x64 /* one memset on the GPU (CUPTI MEMSET) */
#define BS_REC_GPU_API	   0x65 /* CUPTI's view of a launching API call: the correlation id */

#define BS_SHIM_VERSION	  1
#define BS_SHIM_MAGIC	  0x48534253u /* "BSSH" little-endian */
#define BS_SHIM_BATCH_MAX 16384	      /* bytes of records in one batch */

/* The start of the buffer the shim passes to bpfsight:batch (copied with it). */
struct bs_shim_batch_hdr {
	__u32 magic;   /* BS_SHIM_MAGIC */
	__u32 version; /* BS_SHIM_VERSION */
	__u32 nrec;    /* records that follow */
	__u32 len;     /* bytes of records that follow (<= BS_SHIM_BATCH_MAX) */
	__u64 seq;     /* per process, from 1: a gap = batches lost */
};

/* Ring record: hdr.pid/tid = the thread that fired batch, hdr.ts = then. */
struct bs_shim_batch {
	struct bs_hdr h;
	__u32 len;   /* bytes that follow: the shim's bs_shim_batch_hdr + its records */
	__u32 flags; /* BS_SHIM_BATCH_* */
		     /* struct bs_shim_batch_hdr; records */
};

#define BS_SHIM_BATCH_FAULT 0x1 /* the user-memory read failed: content zeroed, records lost */
#define BS_SHIM_BATCH_CLAMP 0x2 /* bytes exceeded the maximum: cut at it */

/* What the shim is doing, written by the shim on every change and on every attach. */
struct bs_shim_status {
	struct bs_hdr h;     /* tid = the shim thread that noticed */
	__u32 state;	     /* BS_SHIM_ST_* bits now true */
	__u32 event;	     /* BS_SHIM_EV_*: why this record */
	__s32 cupti_result;  /* CUptiResult of the failing call (0 = none) */
	__u32 detail_id;     /* string: the failing call, or what owns CUPTI, or a note */
	__u64 dropped;	     /* records dropped since the previous status (buffers full) */
	__u64 seq;	     /* the last batch sequence number sent before this record */
	__u32 cupti_version; /* cuptiGetVersion (0 = CUPTI not loaded) */
	__u32 _pad;
};

#define BS_SHIM_ST_CUDA_INJECTED   0x01 /* InitializeInjection ran (CUDA_INJECTION64_PATH) */
#define BS_SHIM_ST_NVTX_INJECTED   0x02 /* InitializeInjectionNvtx2 ran at least once */
#define BS_SHIM_ST_GPU_ON	   0x04 /* CUPTI activity kinds enabled */
#define BS_SHIM_ST_NVTX_ON	   0x08 /* NVTX calls recorded */
#define BS_SHIM_ST_CUPTI_BUSY	   0x10 /* another CUPTI client (profiler) owns CUPTI: backed off */
#define BS_SHIM_ST_SYNC		   0x20 /* NVTX_BEGIN records sent at once */
#define BS_SHIM_ST_NVTX_CHAINED	   0x40 /* NVTX calls are passed on to another injection library */
#define BS_SHIM_ST_PTRACE_INJECTED 0x80 /* loaded into a running process by record --inject */

/*
 * record --inject installs the shim under a name ending with this: its constructor starts
 * the poller (no CUDA or NVTX entry point will ever call it), sets PTRACE_INJECTED, and the
 * poller loads CUPTI once the process has libcuda and GPU activity is wanted.
 */
#define BS_SHIM_INJECT_SUFFIX "-ptrace.so"

#define BS_SHIM_EV_ATTACH      1 /* a tracer attached (first batch of a session) */
#define BS_SHIM_EV_STATE       2 /* state bits changed */
#define BS_SHIM_EV_CUPTI_ERROR 3 /* a CUPTI call failed: cupti_result, detail_id */
#define BS_SHIM_EV_DRAINED     4 /* drain requested and done: everything before seq is sent */
#define BS_SHIM_EV_DROPPED     5 /* dropped > 0 */
#define BS_SHIM_EV_EXIT	       6 /* the process is exiting: final flush */
/*
 * Written by the recorder, not the shim: a target of -t gpu/nvtx has no shim and gets none
 * (not started with it and no --inject, or the injection was refused): detail_id says why.
 */
#define BS_SHIM_EV_NO_SHIM 7

/*
 * One kernel on the GPU. hdr.ts = GPU start (CLOCK_MONOTONIC: the shim registers CUPTI's
 * timestamp callback), hdr.tid = the thread that launched it (0 = not known).
 */
struct bs_gpu_kernel {
	struct bs_hdr h;
	__u64 dur;
	__u64 call_ts;	   /* entry of the launching call (see BS_GPU_* flags); 0 = unknown */
	__u32 correlation; /* CUPTI correlation id (per process) */
	__u32 name_id;	   /* string: the kernel's name as CUPTI gives it (mangled) */
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 grid[3];
	__u32 block[3];
	__u32 shmem_dynamic;
	__u32 shmem_static;
	__u16 registers; /* per thread */
	__u16 flags;	 /* BS_GPU_* */
	__u32 graph_id;	 /* 0 = not launched from a CUDA graph */
	__u32 _pad;
	__u64 graph_node_id;
};

/* Flags of GPU records: how call_ts/hdr.tid were found. */
#define BS_GPU_CALL_CUDA 0x1 /* a cuda-family event starts at call_ts on hdr.tid */
#define BS_GPU_CALL_API	 0x2 /* only CUPTI's API record was seen: call_ts is its start */
#define BS_GPU_GRAPH	 0x4 /* a node of a CUDA graph */

/* One copy. Kinds are CUPTI's: copy_kind CUpti_ActivityMemcpyKind, src/dst CUpti_ActivityMemoryKind. */
struct bs_gpu_memcpy {
	struct bs_hdr h; /* as bs_gpu_kernel */
	__u64 dur;
	__u64 call_ts;
	__u64 bytes;
	__u32 correlation;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u8 copy_kind; /* 1 HtoD, 2 DtoH, 3 HtoA, 4 AtoH, 5 AtoA, 6 AtoD, 7 DtoA, 8 DtoD, 9 HtoH, 10 PtoP */
	__u8 src_kind;
	__u8 dst_kind;
	__u8 async;  /* CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC */
	__u16 flags; /* BS_GPU_* */
	__u16 _pad;
	__u32 src_device; /* peer copies (MEMCPY2); else = device */
	__u32 dst_device;
	__u32 graph_id;
	__u32 _pad2;
	__u64 graph_node_id;
};

struct bs_gpu_memset {
	struct bs_hdr h; /* as bs_gpu_kernel */
	__u64 dur;
	__u64 call_ts;
	__u64 bytes;
	__u32 correlation;
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 value;
	__u16 mem_kind; /* CUpti_ActivityMemoryKind */
	__u16 flags;	/* BS_GPU_* */
	__u32 graph_id;
	__u32 _pad;
	__u64 graph_node_id;
};

/*
 * A runtime or driver call as CUPTI saw it (only the calls that put work on the GPU are
 * enabled): what joins a GPU record's correlation id to a thread and a time. hdr.ts = CUPTI's
 * start, hdr.tid = the calling thread.
 */
struct bs_gpu_api {
	struct bs_hdr h;
	__u64 dur;
	__u64 call_ts; /* entry of the cuda-family event containing it (0 = none) */
	__u32 correlation;
	__u32 cbid;    /* CUPTI callback id in its domain */
	__u32 name_id; /* string: cuptiGetCallbackName */
	__u32 ret;     /* cudaError_t or CUresult */
	__u16 domain;  /* 1 = driver, 2 = runtime (CUpti_CallbackDomain) */
	__u16 flags;   /* BS_GPU_CALL_CUDA when call_ts was found */
	__u32 _pad;
};

BS_ASSERT_RECORD(bs_shim_batch_hdr, 24);
BS_ASSERT_RECORD(bs_shim_batch, 32);
BS_ASSERT_RECORD(bs_shim_status, 64);
BS_ASSERT_RECORD(bs_gpu_kernel, 112);
BS_ASSERT_RECORD(bs_gpu_memcpy, 96);
BS_ASSERT_RECORD(bs_gpu_memset, 88);
BS_ASSERT_RECORD(bs_gpu_api, 64);

/* nvtx family: written by the shim's NVTX handlers. */
#define BS_REC_NVTX_RANGE 0x70 /* a push/pop or start/end range, written when it ends */
#define BS_REC_NVTX_MARK  0x71 /* an instant marker */
#define BS_REC_NVTX_NAME  0x72 /* a name given to a thread or a category */
#define BS_REC_NVTX_BEGIN 0x73 /* a range began (sync mode only: --capture-range=nvtx) */

/* hdr.ts = start, hdr.tid = the thread that pushed or started it. */
struct bs_nvtx_range {
	struct bs_hdr h;
	__u64 dur;	 /* with BS_NVTX_OPEN: until the recording stopped */
	__u64 range_id;	 /* start/end ranges: nvtxRangeStart's id; push/pop: 0 */
	__u64 payload;	 /* raw bits; type in BS_NVTX_PAYLOAD_* */
	__u32 name_id;	 /* string: the message (0 = none) */
	__u32 domain_id; /* string: the domain's name (0 = the default domain) */
	__u32 end_tid;	 /* the thread that ended it (= hdr.tid for push/pop) */
	__u32 category;
	__u32 color; /* ARGB (BS_NVTX_COLOR) */
	__u16 depth; /* push/pop: ranges of the domain open on the thread around it */
	__u16 flags; /* BS_NVTX_* */
};

/* hdr.ts = the mark, hdr.tid = the thread. */
struct bs_nvtx_mark {
	struct bs_hdr h;
	__u64 payload;
	__u32 name_id;
	__u32 domain_id;
	__u32 category;
	__u32 color;
	__u16 flags;
	__u16 _pad;
	__u32 _pad2;
};

/* nvtxNameOsThread / nvtxNameCategory / nvtxDomainNameCategory. hdr.tid = the caller. */
struct bs_nvtx_name {
	struct bs_hdr h;
	__u64 key;	 /* the OS thread id, or the category */
	__u32 kind;	 /* BS_NVTX_NAME_* */
	__u32 name_id;	 /* string */
	__u32 domain_id; /* string (categories are per domain) */
	__u32 _pad;
};

#define BS_NVTX_NAME_THREAD   1
#define BS_NVTX_NAME_CATEGORY 2

/* Sync mode: a range began (its RANGE record follows when it ends). */
struct bs_nvtx_begin {
	struct bs_hdr h;
	__u64 range_id;
	__u32 name_id;
	__u32 domain_id;
};

#define BS_NVTX_PUSHPOP	     0x001 /* nvtxRangePush/Pop (else start/end) */
#define BS_NVTX_OPEN	     0x002 /* not ended when the recording stopped */
#define BS_NVTX_COLOR	     0x004 /* color holds an ARGB value */
#define BS_NVTX_PAYLOAD_MASK 0x070
#define BS_NVTX_PAYLOAD_NONE 0x000
#define BS_NVTX_PAYLOAD_U64  0x010
#define BS_NVTX_PAYLOAD_I64  0x020
#define BS_NVTX_PAYLOAD_F64  0x030
#define BS_NVTX_PAYLOAD_U32  0x040
#define BS_NVTX_PAYLOAD_I32  0x050
#define BS_NVTX_PAYLOAD_F32  0x060
#define BS_NVTX_REGISTERED   0x080 /* the message was a registered string handle */

BS_ASSERT_RECORD(bs_nvtx_range, 72);
BS_ASSERT_RECORD(bs_nvtx_mark, 56);
BS_ASSERT_RECORD(bs_nvtx_name, 48);
BS_ASSERT_RECORD(bs_nvtx_begin, 40);
/* ---- end of the cupti-shim channel, gpu and nvtx families ---- */

/* ---- stacks (any family's events) and the cpu family: user/stacks/, docs/STACKS.md ---- */

/*
 * One call stack, interned by the recorder: written once, before the first record that names
 * its id. Frames follow the header, innermost first. Native frames are symbolized while the
 * process lives (module, function, address relative to the module), so a file never needs the
 * traced machine to be read. hdr.pid/tid/ts: of the first record that used it.
 */
#define BS_REC_STACK 0x0b

struct bs_stack {
	struct bs_hdr h;
	__u32 id; /* > 0, unique in the file */
	__u16 nframes;
	__u16 flags; /* BS_STACK_* */
		     /* struct bs_frame frames[nframes]; */
};

#define BS_STACK_TRUNCATED 0x1 /* deeper frames were cut at the depth cap */

struct bs_frame {
	__u64 addr;    /* native: the module's ELF address (or the raw address when unknown) */
	__u32 func_id; /* string id of the function (demangled), 0 = unknown */
	__u32 file_id; /* string id of the module (native) or source file (python), 0 = unknown */
	__u32 line;    /* python: line number; else 0 */
	__u32 kind;    /* BS_FRAME_* */
};

#define BS_FRAME_NATIVE 1 /* user-space machine code */
#define BS_FRAME_PYTHON 2 /* a Python function (file, line) */
#define BS_FRAME_CUT                                                                               \
	3 /* marker: the unwind stopped here (file_id = the module without frame pointers) */

#define BS_STACK_MAX_FRAMES 128 /* frames kept per stack: deeper ones are cut (TRUNCATED) */

/*
 * An event's stack (--stacks), as BPF read it (ring only, never on disk): written just
 * before the event's own record; hdr.pid/tid/ts are the event's. The recorder symbolizes it
 * and writes a STACK_REF in its place. Addresses and Python frames follow as in
 * bs_cpu_sample_raw.
 */
#define BS_REC_STACK_RAW 0x0c

struct bs_stack_raw {
	struct bs_hdr h;
	__u32 nips;
	__u32 flags; /* BS_CPU_PYTHON, BS_CPU_GIL (the thread held the GIL) */
	__u32 npy;
	__u16 event_type; /* the BS_REC_* of the event it belongs to */
	__u16 _pad;
	/* __u64 ips[nips]; struct bs_py_frame py[npy]; */
};

/* The stack of one event: the record of type EVENT_TYPE with this hdr.tid and hdr.ts. */
#define BS_REC_STACK_REF 0x0d

struct bs_stack_ref {
	struct bs_hdr h;
	__u32 stack_id;	  /* bs_stack id */
	__u16 event_type; /* BS_REC_* */
	__u16 flags;	  /* BS_CPU_GIL when the thread held the GIL */
};

/* cpu family: timer samples of traced threads (perf_event). Block 0x80. */
#define BS_REC_CPU_SAMPLE_RAW 0x80 /* ring only: a sample and its raw user stack (never on disk) */
#define BS_REC_CPU_SAMPLE     0x81 /* one on-CPU sample of a thread */

struct bs_cpu_sample_raw {
	struct bs_hdr h;
	__u32 nips;  /* user-space return addresses that follow, innermost first */
	__u32 flags; /* BS_CPU_* */
	__u32 npy;   /* Python frames after the addresses (struct bs_py_frame), innermost first */
	__u32 _pad;
	/* __u64 ips[nips]; struct bs_py_frame py[npy]; */
};

/*
 * One Python frame as BPF saw it: the code object, the instruction it was at, and what
 * identifies the code object when user space reads it later (BS_PY_NAME_ID, BS_PY_FILE_ID):
 * its name and file objects' addresses mixed with the name's hash and the first line. A
 * code object freed meanwhile and its memory reused (pymalloc reuses the last freed block
 * first, for the code object and its strings alike) is named only when the new one has the
 * same name, file object and first line.
 */
struct bs_py_frame {
	__u64 code;
	__u64 instr; /* prev_instr (3.11, 3.12) or instr_ptr (3.13+) */
	__u64 name;  /* co_name ^ co_name->hash */
	__u64 file;  /* co_filename ^ co_firstlineno << 40; bit 0: its eval-loop call's first */
};

#define BS_PY_NAME_ID(name_ptr, name_hash) ((name_ptr) ^ (name_hash))
#define BS_PY_FILE_ID(file_ptr, firstlineno)                                                       \
	(((file_ptr) ^ ((__u64)(__u32)(firstlineno) << 40)) & ~BS_PY_FRAME_ENTRY)
#define BS_PY_STR_HASH 24 /* PyASCIIObject: hash (3.11+) */

#define BS_PY_FRAME_ENTRY 0x1ull /* in bs_py_frame.file: the eval loop was entered here */
#define BS_PY_MAX_FRAMES  64	 /* Python frames read per sample: deeper ones are cut */
#define BS_PY_CODES	  16384	 /* code objects whose identity BPF keeps (py_codes) */
#define BS_PY_NONE	  0xffffffffu
#define BS_PY_ALL	  0xfffffffeu /* fr_entry: every frame is its own eval-loop call (<= 3.10) */

/*
 * How BPF reads one process's Python frames (user/python/py_stack.c fills it from the version):
 * the thread holding the GIL is the one whose Python frames are read.
 */
struct bs_py_cfg {
	__u64 locked;	       /* &gil->locked (int) */
	__u64 holder;	       /* &gil->last_holder (PyThreadState *) */
	__u32 tid_off;	       /* PyThreadState: native_thread_id, or thread_id (pthread_t) */
	__u32 pthread_tid_off; /* 0: tid_off is native_thread_id; else tid's offset in pthread */
	__u32 ts_frame;	       /* PyThreadState: cframe (3.11, 3.12) or current_frame (3.13+) */
	__u32 cframe_frame;    /* _PyCFrame: current_frame; BS_PY_NONE when ts_frame is it */
	__u32 fr_code;	       /* _PyInterpreterFrame: f_code / f_executable */
	__u32 fr_prev;	       /* previous */
	__u32 fr_instr;	       /* prev_instr / instr_ptr */
	__u32 fr_owner;	       /* owner (char) */
	__u32 fr_entry;	       /* is_entry (3.11, bool); BS_PY_NONE */
	__u32 owner_cstack;    /* owner of the eval loop's entry frames (3.12+: 3); BS_PY_NONE */
	__u32 co_name;	       /* PyCodeObject: co_name */
	__u32 co_filename;     /* co_filename */
	__u32 co_firstlineno;  /* co_firstlineno (int) */
	__u32 threads_head;    /* PyInterpreterState: threads.head (0 = no list walk) */
	__u32 ts_gil;	       /* PyThreadState: the u32 that says its thread holds the GIL
				* (3.12 _status.active, 3.13 _status.holds_gil, 3.14+ holds_gil);
				* BS_PY_NONE: the GIL's holder says it (<= 3.11) */
	__u32 ts_gil_mask;     /* its bits that say so */
	__u64 interp;	       /* the main interpreter: its thread states find the threads
				* that released the GIL (native_thread_id only: 3.11+) */
	__u32 code_gen;	       /* this registration's number: py_codes keys of an earlier
				* image of the pid (before an exec) never match */
	__u32 code_cache;      /* 1: a probe on the code objects' dealloc removes their
				* py_codes entries, so BPF may keep identities there */
	__u64 code_frees;      /* code objects freed: counted by that probe (0 from user
				* space); a walk's identities stay good while it stands */
};

/*
 * A code object's identity as BPF read it (bs_py_frame's name and file), kept between
 * events in the py_codes map while the object lives: the probe on its type's tp_dealloc
 * (bpf/pycode.bpf.c) removes the entry before the memory can be reused.
 */
struct bs_py_code_key {
	__u32 pid;
	__u32 gen; /* bs_py_cfg.code_gen */
	__u64 code;
};

struct bs_py_code_id {
	__u64 name, file;
};

struct bs_cpu_sample {
	struct bs_hdr h;
	__u32 stack_id; /* bs_stack id, 0 = no user stack (a kernel thread, or none could be read) */
	__u32 flags;	/* BS_CPU_* */
};

/* The sample hit kernel code: its stack is where user space entered the kernel. */
#define BS_CPU_KERNEL 0x1
/* A Python thread holding the GIL. */
#define BS_CPU_GIL 0x2
/* A thread of a Python process whose frames bpfsight can read (BS_CPU_GIL says if it held it). */
#define BS_CPU_PYTHON 0x4
/*
 * Ring only (BS_REC_CPU_SAMPLE_RAW, BS_REC_STACK_RAW; never on disk): the first
 * BS_STACK_TOP_WORDS address words are the words on top of the user stack, the sampled
 * instruction and the walk's return addresses follow (user/stacks/stack_svc.c finds there the
 * return addresses a frame-pointer walk misses: functions that had no frame of their own).
 */
#define BS_CPU_LEAF	   0x8
#define BS_STACK_TOP_WORDS 8

BS_ASSERT_RECORD(bs_stack, 32);
BS_ASSERT_RECORD(bs_stack_raw, 40);
BS_ASSERT_RECORD(bs_stack_ref, 32);
BS_ASSERT_RECORD(bs_frame, 24);
BS_ASSERT_RECORD(bs_cpu_sample_raw, 40);
BS_ASSERT_RECORD(bs_py_frame, 32);
BS_ASSERT_RECORD(bs_py_cfg, 104);
BS_ASSERT_RECORD(bs_py_code_key, 16);
BS_ASSERT_RECORD(bs_py_code_id, 16);
BS_ASSERT_RECORD(bs_cpu_sample, 32);
/* ---- end of stacks and the cpu family ---- */

#endif /* BPFSIGHT_RECORDS_H */
