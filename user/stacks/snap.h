/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every thread's stack of a live process now, Python and native, without stopping it
 * (`bpfsight stacks`, docs/STACKS.md "bpfsight stacks"): a BPF task iterator says where each
 * thread is (its state, the registers saved where it entered the kernel); a thread that is
 * not running has its stack read from the process's memory from those registers (native
 * frames by frame pointers, Python frames as BPF reads them: py_walk.h), kept only when its
 * context-switch count shows it did not run meanwhile; a thread running on a CPU gets a
 * task-clock perf event whose BPF program reads its stack at the interrupt (bpf/snap.bpf.c).
 * Frames are named by the recording's stack service (native_frames, py_stack__name), into
 * STACK records the snap's trace model keeps.
 */
#ifndef BPFSIGHT_SNAP_H
#define BPFSIGHT_SNAP_H

#include <sys/types.h>
#include <linux/types.h>
#include "py_threads.h"
#include "snap_task.h"

struct record_ctx;
struct stack_svc;
struct trace_model;

struct snap_thread {
	struct snap_task task; /* the iterator's last view of it */
	/*
	 * Its own clocks (schedstat's) at the first look that saw it, the snapshot's moment
	 * (read_at, for each thread there at the start): the last view's are up to the wait for
	 * a running thread's sample later (300 ms at a recording's edges), and a ready thread on
	 * a loaded machine waits for its CPU meanwhile (the ledger's check counted 6 points more
	 * of its time ready to run by its clock than by the timeline up to read_at).
	 */
	__u64 cpu_ns, run_delay_ns;
	__u32 stack_id;		       /* its stack (trace_model__stack(snap.model, id)), 0: none */
	int gil;		       /* it holds the GIL */
	int sampled;		       /* read by a sample while it ran (else from memory) */
	int in_kernel;		       /* sampled in the kernel (a system call, a fault) */
	const char *error;	       /* why it has no stack, NULL when it has one */
	char name[PY_THREAD_NAME_MAX]; /* its Python name, "" when none */
};

struct snap {
	pid_t pid;
	__u32 python_minor; /* 3.MINOR whose Python frames were read, 0: none */
	/* A CPython whose frames could not be read: its version and why (stack_svc), else "" */
	char python_unread[512];
	__u64 gil, gil_end; /* where its GIL's state lies (a futex there is a wait for it) */
	struct snap_thread *threads;
	__u32 n;
	const struct trace_model *model; /* names the stacks (`bpfsight stacks`), else NULL */
	struct trace_model *own_model;	 /* snap__take's, freed with the snap */
	__u64 took_ns;			 /* from the start (BPF loaded) to the last stack named */
	__u64 read_at;			 /* CLOCK_MONOTONIC ns of the first look at the threads */
	__u64 read_ns;			 /* from it to the last stack read */
	__u32 rounds;			 /* iterations of the not-running threads' reads */
	const char *failure;		 /* why snap__take failed (with its errno) */
	__s32 env_rank, env_local_rank, env_world; /* RANK... in its environment, -1: none */
	/*
	 * The job it belongs to, from its environment: "MASTER_ADDR:MASTER_PORT", else
	 * "TORCHELASTIC_RUN_ID=...", else "" (its launcher, ppid, then tells).
	 */
	char job[192];
	pid_t ppid;
	char exe[4096];	    /* its executable, "" when unknown */
	char cmdline[4096]; /* its command line, arguments apart by spaces */
};

/*
 * What reads processes: the BPF side loaded once (a task iterator, a sampler), and the stack
 * service naming what it reads. CTX and SVC: a recording's (the hang trigger's snapshot): the
 * stacks become STACK records of the recording, and its shared maps (Python processes, code
 * objects, unwind tables) are used. NULL: `bpfsight stacks`, with a service of its own on
 * PIDS, whose stacks a model names (snap_session__model). NULL with *ERR and *WHY on failure.
 */
struct snap_session;
struct snap_session *snap_session__new(struct record_ctx *ctx, struct stack_svc *svc,
				       const pid_t *pids, int npids, int *err, const char **why);
void snap_session__free(struct snap_session *ss);
/* The model that names the stacks of a session of its own; NULL for a recording's. */
const struct trace_model *snap_session__model(const struct snap_session *ss);
/*
 * The stacks of every thread of process PID (a thread id names its process), waiting at most
 * WAIT_NS for the samples of running threads. 0, or a negative errno with out->failure set
 * (-ESRCH: no such process, or it exited during the dump; -EPERM: not allowed). OUT's stacks
 * are named by the session's model (or are the recording's STACK records).
 */
int snap_session__take(struct snap_session *ss, pid_t pid, __u64 wait_ns, struct snap *out);
/* TH of S asleep waiting for its process's GIL: a futex in the GIL's own state. */
int snap__waits_for_gil(const struct snap *s, const struct snap_thread *th);
/* TH's BS_SNAP_* flags (snap_records.h): running, sampled, the GIL held or waited for... */
__u32 snap__flags(const struct snap *s, const struct snap_thread *th);
/* TH's state and its flags, as thread_state.h words them, into BUF. */
const char *snap__state(const struct snap *s, const struct snap_thread *th, char *buf, size_t len);
/* One process, with a session of its own made and freed for it. */
int snap__take(pid_t pid, __u64 wait_ns, struct snap *out);
void snap__free(struct snap *s);

#endif /* BPFSIGHT_SNAP_H */
