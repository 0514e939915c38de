/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ledger: every nanosecond of each traced thread's time in the recording, accounted to one
 * entry, what the thread was doing then and where in its own code (docs/USAGE.md, "How the
 * verdict is made"). Built when a trace is read, from what the families feed it (struct
 * family_ledger, below):
 *
 * - sched's off-CPU intervals make the thread's timeline: on a CPU, off it asleep, or ready to
 *   run without a CPU (the interval's tail after its wakeup);
 * - spans: a call or wait the thread was inside (a GIL wait, a CUDA or NCCL call, a system
 *   call), each of a kind with a priority: where spans overlap, the highest one's kind wins;
 * - the stack of a blocked interval (--stacks=sched) says what it waited in (a lock, the
 *   DataLoader's queue, a sleep) and the job's line: the frame rules (the interpreter's and
 *   libc's here, a family's in its struct family_ledger) read it; an interval too short for a
 *   stack takes the places its thread's stacked intervals of the same system call had;
 * - CPU samples split the time on a CPU outside any span by what ran (Python code and its
 *   line, a native library's function, garbage collection, page faults, system calls).
 *
 * Time ready to run inside a wait (its wakeup's tail) stays the wait's: the thread's own clock
 * counts it there; outside any wait (a thread preempted while it computed) it is an entry of
 * its own, with who had the CPUs: the job's own busy threads, or other processes.
 */
#ifndef BPFSIGHT_LEDGER_H
#define BPFSIGHT_LEDGER_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct trace_model;
struct trace_stack;
struct ucall_api;

enum ledger_kind {
	LEDGER_CODE,	   /* on a CPU, running code: Python, or a native library's */
	LEDGER_INTERP,	   /* on a CPU, the interpreter's own work: garbage collection, imports */
	LEDGER_FAULT,	   /* on a CPU, handling page faults */
	LEDGER_CPU,	   /* on a CPU, code not sampled (-t cpu not recorded) */
	LEDGER_RUNNABLE,   /* ready to run, no CPU, outside any wait */
	LEDGER_GIL,	   /* waiting for the GIL */
	LEDGER_COLLECTIVE, /* in a collective (NCCL, gloo, torch.distributed) */
	LEDGER_GPU_SYNC,   /* in a CUDA synchronization */
	LEDGER_API,	   /* in another call of a traced API (CUDA, cuBLAS...) */
	LEDGER_INPUT,	   /* waiting for the DataLoader's next batch */
	LEDGER_LOCK,	   /* waiting for a lock, condition, queue or event of the program */
	LEDGER_CHILD,	   /* waiting for a child process */
	LEDGER_SLEEP,	   /* sleeping */
	LEDGER_IO,	   /* waiting for I/O readiness: poll, select, epoll, accept */
	LEDGER_SYSCALL,	   /* in another system call */
	LEDGER_IDLE,	   /* waiting for work by design (a pool's worker, an idle event loop) */
	LEDGER_BLOCKED,	   /* blocked off its CPU, in what is not known */
	LEDGER_KINDS,
};

/* "lock", "CPU", ...: the kind's word in tables and JSON. */
const char *ledger__kind_name(enum ledger_kind k);
/* "lock", "interp", ...: the kind's key, one per kind (rows that are read back). */
const char *ledger__kind_key(enum ledger_kind k);
/* The kind whose key is KEY, -1 when none is. */
int ledger__kind_of(const char *key);

/* A span's priority: higher wins where spans overlap (ledger.c's table). */
int ledger__kind_prio(enum ledger_kind k);

struct ledger;

/* ---- what families feed (struct family_ledger.feed) ---- */

/* The kind a wait in system call NR is (x86-64's numbers): a sleep, I/O readiness, a child's
 * wait, a futex's lock; LEDGER_SYSCALL for the others. */
enum ledger_kind ledger__kind_of_syscall(int nr);

/* sched: thread TID of PID off CPU (the one it left) from OUT for DUR, its last RUNNABLE ns
 * ready to run;
 * BLOCKED: it slept (else it was preempted); WAKER: who woke it (0: unknown); STACK: where it
 * blocked (--stacks=sched), NULL when none. */
void ledger__offcpu(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 out, __u64 dur,
		    __u64 runnable, int blocked, __u32 waker, const struct trace_stack *stack);
/*
 * A live read (top's): thread TID off its CPU at OUT + DUR, since OUT. Its sleep goes on after
 * the read until a record says it ran (the next interval of its own), else to the window's end.
 */
void ledger__offcpu_now(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 out, __u64 dur,
			int blocked, const struct trace_stack *stack);

/* A span of thread TID of PID: inside WHAT (a function, "the GIL") of KIND from TS for DUR; NR
 * its system call (-1: none), OTHER a thread it waited for (the GIL's holder; 0: none). */
struct ledger_span {
	__u32 pid, tid;
	__u64 ts, dur;
	enum ledger_kind kind;
	const char *what;
	int nr;
	__u32 other;
	const struct trace_stack *stack; /* where the thread was, NULL: not known */
};
void ledger__span(struct ledger *l, const struct ledger_span *s);
/*
 * A call shorter than this is not kept (a feed skips it before looking anything up): its time
 * on a CPU the samples find (one in the kernel says its system call; one in a library, its
 * function), and a wait that brief says nothing a longer one's stack would not. Most of a
 * trace's calls are: what the ledger's cost is, bench/RESULTS.md.
 */
#define LEDGER_SPAN_MIN_NS 20000ull
/* An off-CPU interval shorter than this has no stack looked up (one of the same call's does). */
#define LEDGER_STACK_MIN_NS 50000ull

/* A uprobe-API family's record REC of its table T as a span (its outermost calls), of the kind
 * KIND says of its entry (NULL: LEDGER_API): its feed, in one line. */
struct ucall_table;
void ledger__api_call(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m,
		      const struct ucall_table *t,
		      enum ledger_kind (*kind)(const struct ucall_api *));

/* cpu: a sample of thread TID of PID at TS; KERNEL: in kernel code, FAULT: for a page fault,
 * NR: the system call it was in (-1: none, or not known), STACK its stack (NULL: none). */
void ledger__sample(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 ts, int kernel,
		    int fault, int nr, const struct trace_stack *stack);

/*
 * proc: thread TID of PID's own clocks read at TS, at the recording's start (END 0) or end:
 * its time on a CPU and ready to run so far (its schedstat), what ledger__check compares the
 * ledger's account of it with. STALE: asleep with a stale queue stamp (BS_SNAP_CLOCK_STALE):
 * at the start, its run_delay will count part of that sleep.
 */
void ledger__clock(struct ledger *l, __u32 pid, __u32 tid, __u64 ts, __u64 cpu_ns,
		   __u64 run_delay_ns, int end, int stale);

/*
 * sched: at TS, thread TID of PID's schedstat added EXTRA ns more to its time ready to run than
 * it waited (a stale queue stamp: bs_clock_skew): taken out of its clock where the check reads it.
 */
void ledger__clock_skew(struct ledger *l, __u32 pid, __u32 tid, __u64 ts, __u64 extra);

/* proc: thread TID of PID began (BORN) or ended (DIED) inside the recording; 0 = not seen. */
void ledger__life(struct ledger *l, __u32 pid, __u32 tid, __u64 born, __u64 died);

/*
 * A frame rule: a Python frame of a file ending in FILE (NULL: any) and function FUNC (NULL:
 * any), or with NATIVE a native function named FUNC, means the thread is in WHAT, of KIND.
 * Among a stack's frames from the innermost to the job's own code, the rule of the highest
 * kind priority wins (the DataLoader's __next__ over the queue.get inside it), of equal ones
 * the outermost. IDLE: a wait there is for work, by design (a pool's worker waiting for its
 * next task).
 */
struct ledger_frame_rule {
	enum ledger_kind kind;
	const char *file, *func;
	const char *what;
	unsigned native : 1, idle : 1;
	/*
	 * A region: it holds wherever it is on the stack, the job's own code inside it too (a
	 * DataLoader's __next__ running the dataset in-process); the job's line is the one
	 * outside it.
	 */
	unsigned region : 1;
};

/* A family's part of the ledger (struct family_stats.ledger). */
struct family_ledger {
	/* Every record of the family's types, in file order: the facts above. May be NULL. */
	void (*feed)(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m);
	/* Its frame rules, ending with a zeroed one; NULL: none. */
	const struct ledger_frame_rule *frames;
	/*
	 * The kind a thread is in when its stack is in entry A of the family's API table
	 * (struct family.api): a collective, a CUDA synchronization. NULL: not told apart.
	 */
	enum ledger_kind (*api_kind)(const struct ucall_api *a);
};

/* ---- what stats and the verdict do ---- */

/* An empty ledger for the trace model M walks. */
struct ledger *ledger__new(const struct trace_model *m);
void ledger__free(struct ledger *l);
/*
 * The time the ledger accounts, [START, END) (CLOCK_MONOTONIC ns), in place of the trace's
 * (its model's start and end): an interval of a live view (top's), set before building.
 */
void ledger__set_window(struct ledger *l, __u64 start, __u64 end);
/* Every record of the pass: to the feed of the family its type is (every family's table). */
void ledger__add(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m);
/*
 * Once the pass is over (while M still names things): the critical unit, and the entries of
 * the threads it needs (its own, its process's); the others stay as they came (their
 * timeline's quick sums bound them out of the choice). 0 or -errno.
 */
int ledger__build(struct ledger *l, const struct trace_model *m);
/* The same and every thread's entries (the ledger report's rows, its clock rows). */
int ledger__build_all(struct ledger *l, const struct trace_model *m);
/* Whether the ledger could be built: sched's timeline was recorded. */
int ledger__has_timeline(const struct ledger *l);

/* One entry of a thread, or of a unit (a pool: its threads' entries summed). */
struct ledger_entry {
	enum ledger_kind kind;
	const char *what;  /* "`work` (lock.py:6)"'s function part, "threading.Lock", "fsync" */
	const char *where; /* the job's line: "`worker` (lock.py:10)"; "" when not known */
	__u64 ns;	   /* its time, all states */
	__u64 oncpu_ns, runnable_ns; /* of NS, on a CPU and ready to run (the rest blocked) */
	__u64 own_ns;		 /* LEDGER_RUNNABLE: of NS, the job's own threads had every CPU */
	__u32 waker;		 /* the thread that ended most of its blocked time (0: none) */
	__u32 waker_pid;	 /* its process (0: not a traced thread's) */
	__u64 waker_ns;		 /* that thread's part */
	const char *waker_where; /* where that thread was before it woke this one ("": ?) */
	unsigned idle : 1;	 /* waiting for work, by design */
	unsigned own : 1;	 /* WHERE is the job's own code (not a library's) */
	/*
	 * LEDGER_RUNNABLE: what the thread was inside as it waited for a CPU (WHAT and WHERE are
	 * that's): a wait it woke from (LEDGER_LOCK: a lock's wakeup), a call (a span's kind),
	 * or LEDGER_CODE, its own code, preempted as it ran.
	 */
	enum ledger_kind inside;
	__u32 cls; /* the ledger's class it was made of (the same class, the same entry) */
};

/* The unit whose time the verdict explains first: a thread, or a pool of like threads. */
struct ledger_unit {
	__u32 pid, tid;	   /* tid: its thread's, or the first of a pool's */
	__u32 nthreads;	   /* 1, or a pool's threads */
	char name[128];	   /* "MainThread", a pool's "w0..w3" */
	__u64 total_ns;	   /* its threads' time in the recording, summed */
	__u32 job_threads; /* the job's threads busy at once at most, */
	__u32 cpus;	   /* on this many CPUs */
	/*
	 * The weight it was chosen by (its threads' time engaged: the best candidate's, before a
	 * driving main thread of its process takes its place): two files' units compared so.
	 */
	__u64 score;
};

/*
 * The critical unit (the thread or pool that carries the job's progress): 0, or -ENOENT when
 * no thread has a timeline. Its entries, the largest first, into *ENTRIES (the ledger's; valid
 * until ledger__free), *N of them.
 */
int ledger__critical(const struct ledger *l, struct ledger_unit *u,
		     const struct ledger_entry **entries, size_t *n);

/* Thread TID of PID's entries, the largest first; its time in the recording into *TOTAL. */
const struct ledger_entry *ledger__thread(const struct ledger *l, __u32 pid, __u32 tid, size_t *n,
					  __u64 *total);

/*
 * Thread TID of PID's time in entries of KIND and ready to run inside them (a DataLoader's next
 * batch, with the wakeups' waits for a CPU: what the thread's own clock counts there); 0 when
 * the ledger has no such thread.
 */
__u64 ledger__time_in(const struct ledger *l, __u32 pid, __u32 tid, enum ledger_kind kind);

/* Iterate the threads: start with *IT = 0; 0 past the last. */
int ledger__next_thread(const struct ledger *l, size_t *it, __u32 *pid, __u32 *tid);

/*
 * A thread's account checked against its own clocks between the recording's edges: its time
 * on a CPU and ready to run by the ledger's timeline and by its kernel's schedstat.
 */
struct ledger_check {
	__u32 pid, tid;
	__u64 window_ns;
	__u64 oncpu_ns, clock_oncpu_ns;
	__u64 runnable_ns, clock_runnable_ns;
	int clock_stale; /* clock_runnable_ns counts part of a sleep: no check (BS_SNAP_CLOCK_STALE) */
	__u64 clock_skew_ns; /* taken out of clock_runnable_ns: sleeps its schedstat counted */
};

/* The next thread read at both edges (start with *IT = 0): 1, 0 past the last. */
int ledger__check(const struct ledger *l, size_t *it, struct ledger_check *c);

/*
 * ---- a ledger given (stats --from: what the pass that rendered a file's rows found) ----
 * The ledger is then those answers alone: built, with a timeline.
 */

/* The critical unit U and its entries E (N, the largest first; their strings copied). 0, -errno. */
int ledger__give_unit(struct ledger *l, const struct ledger_unit *u, const struct ledger_entry *e,
		      size_t n);
/* Thread TID of PID's time in entries of KIND (ledger__time_in's answer). 0, -ENOMEM. */
int ledger__give_time_in(struct ledger *l, __u32 pid, __u32 tid, enum ledger_kind kind, __u64 ns);

/* An entry in words: "waited for a threading.Lock at `worker` (lock.py:10)" (PLURAL: of a
 * pool, "were ..."). Into BUF. */
const char *ledger__entry_text(const struct ledger_entry *e, int plural, char *buf, size_t len);

#endif /* BPFSIGHT_LEDGER_H */
