/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ledger's own parts (ledger.h is what the families and the verdict see): the facts kept
 * per thread, the classes entries are made of, the stacks' classification
 * (ledger_classify.c), the build of one thread's timeline (ledger.c) and the critical unit
 * with who had the CPUs (ledger_unit.c).
 */
#ifndef BPFSIGHT_LEDGER_INT_H
#define BPFSIGHT_LEDGER_INT_H

#include "ledger.h"

struct hmap;
struct family_ledger;

#define LCLASS_NONE 0xffffffffu

/* What an entry is: its kind, what and where (the ledger's own copies), waiting for work. */
struct lclass {
	enum ledger_kind kind;
	char *what, *where;
	int idle;
	enum ledger_kind inside; /* LEDGER_RUNNABLE: in what (ledger_entry.inside) */
	int own;		 /* WHERE is the job's own code */
};

/* sched's off-CPU interval [out, in), its last RUN ns ready to run. */
struct loff {
	__u64 out, in, run;
	const struct trace_stack *stack;
	__u32 waker;
	__u8 blocked;
	__u8 open; /* a live read's: the sleep went on past IN (ledger__offcpu_now) */
};

/* A span [ts, end) of a kind; NR its system call (-1: none). */
struct lspan {
	__u64 ts, end;
	const struct trace_stack *stack;
	const char *what; /* interned in the ledger's pool */
	__u32 other;
	__u32 cls; /* its class, once asked (LCLASS_NONE before) */
	__s16 nr;
	__u8 kind;
};

struct lsample {
	__u64 ts;
	const struct trace_stack *stack;
	__s16 nr;
	__u8 kernel, fault;
};

/* A piece of the classified timeline: [ts, end) of class CLS (LCLASS_NONE: on a CPU, by samples). */
struct lseg {
	__u64 ts, end;
	__u32 cls;
	__u8 state; /* LSTATE_* */
};

#define LSTATE_ONCPU	0
#define LSTATE_BLOCKED	1
#define LSTATE_RUNNABLE 2

struct lwait {
	__u64 in; /* when the wait ended: its wakeup (the waker then was where it woke it) */
	__u32 cls, waker;
	__u64 ns;
};

struct lthread {
	__u32 pid, tid;
	__u64 born, died;
	struct loff *off;
	size_t noff, coff;
	struct lspan *sp;
	size_t nsp, csp;
	struct lsample *sa;
	size_t nsa, csa;
	/* the build's */
	__u64 w0, w1;
	struct lseg *seg;
	size_t nseg, cseg;
	struct lwait *waits; /* blocked intervals with a waker, for whom they waited */
	size_t nwaits, cwaits;
	struct ledger_entry *e;
	size_t ne;
	__u64 total, idle_ns;
	int throughout; /* blocked in one wait for (nearly) all of its time */
	/*
	 * The quick sums of its off-CPU intervals (ledger__quick), before any build: what the
	 * critical unit's choice bounds a thread's weight by, to build only the threads it needs.
	 */
	__u64 q_on, q_ready, q_blocked;
	int throughout_q; /* one wait of nearly all its time, by them */
	int built;
	/* its own clocks at the edges: [0] the start's, [1] the end's (ts 0: not read) */
	__u64 clk_ts[2], clk_cpu[2], clk_delay[2];
	int clk_stale; /* its run_delay counts part of a sleep (BS_SNAP_CLOCK_STALE at the start) */
	/* What its schedstat added beyond its waits, and when (bs_clock_skew) */
	struct lskew {
		__u64 ts, ns;
	} * skew;
	size_t nskew, cskew;
};

struct ledger {
	const struct trace_model *m;
	struct hmap *threads; /* {pid, tid} -> index + 1 in thr */
	struct hmap *tid_pid; /* {tid} -> pid: a waker's process (made when asked) */
	size_t tid_pid_n;     /* the threads it was made of */
	struct lthread *thr;
	size_t nthr, cthr;
	struct lclass *cls;
	size_t ncls, ccls;
	struct hmap *cls_of;	/* {kind, hash(what, where)} -> class index + 1 */
	struct hmap *stack_cls; /* {stack id, nr << 8 | what it classifies} -> class + 1 */
	struct hmap *strings;	/* {hash} -> string index + 1: spans' what */
	char **str;
	size_t nstr, cstr;
	struct hmap *cpus;   /* {pid, cpu} -> 1: the CPUs each process was on */
	struct hmap *frames; /* {func_id << 32 | file_id, kind} -> struct lframe */
	/* the feed of each record type's family (NULL: none) */
	const struct family_ledger **feed_of;
	int timeline;		  /* sched's records were seen */
	size_t last_thr;	  /* the thread fed last, + 1: the next record is often its */
	__u32 seen_pid, seen_cpu; /* the CPU seen last, and its process */
	const char *last_what;	  /* a span's what as given last, and as interned */
	const char *last_interned;
	__u64 win_start, win_end; /* ledger__set_window's, 0: the trace's */
	__u64 first_ts, last_ts;
	int built;
	int finished;	  /* the unit is chosen: a thread built now is finished as it is */
	__u64 start, end; /* the window built */
	struct ledger_entry *unit_e; /* the critical unit's entries (a pool's, summed) */
	size_t unit_ne;
	struct ledger_unit unit;
	int has_unit;
};

/* What a frame (its function and file) says, once per ledger: the classification's cache. */
struct lframe {
	const struct ledger_frame_rule *rule;	/* the frame rule of the highest kind, NULL: none */
	const struct ledger_frame_rule *region; /* a region's rule (rule.region), NULL: none */
	const char *api;			/* a traced API's entry it is, NULL: none */
	const char *dist;			/* torch.distributed's function it is, NULL: none */
	__s32 api_kind;				/* that API's kind for the ledger, -1: none */
	__u8 seen;
	__u8 python;  /* a Python frame */
	__u8 own;     /* ... of the job's own code (not the interpreter's library, a package) */
	__u8 runtime; /* a native frame of the C runtime (libc, libpthread, ld.so...) */
	__u8 program; /* a named native frame of a program's own code (not a shared library) */
};

struct lthread *ledger__thr(struct ledger *l, __u32 pid, __u32 tid, int create);
/* The class of KIND, WHAT, WHERE (copied), IDLE: its index, LCLASS_NONE out of memory. */
__u32 ledger__class(struct ledger *l, enum ledger_kind kind, const char *what, const char *where,
		    int idle);
/* The same, OWN: WHERE is the job's own code (a line of its own file, its program's code). */
__u32 ledger__class_own(struct ledger *l, enum ledger_kind kind, const char *what,
			const char *where, int idle, int own);
const char *ledger__intern(struct ledger *l, const char *s);
/* The class of time ready to run inside class CLS (LEDGER_RUNNABLE, CLS's what and where). */
__u32 ledger__ready_class(struct ledger *l, __u32 cls);

/* ledger_classify.c: the class of a blocked interval's stack in system call NR (-1: none or not
 * known); LCLASS_NONE when the stack says nothing (no stack, no rule, no system call). */
__u32 ledger__class_of_wait(struct ledger *l, const struct trace_stack *st, int nr);
/* The class of a sample (never LCLASS_NONE but out of memory). */
__u32 ledger__class_of_sample(struct ledger *l, const struct lsample *s);
/* A system call's name, "syscall_N" when the table has none. Into BUF. */
const char *ledger__nr_name(int nr, char *buf, size_t len);

/* ledger.c: thread T's timeline and entries, once. 0 or -errno. */
int ledger__build_thread(struct ledger *l, struct lthread *t);

/* ledger_unit.c: a thread built after the unit's choice: its waits for a CPU, its wakers. */
void ledger__finish_thread(struct ledger *l, struct lthread *t);
/* ledger_unit.c: the critical unit, the job's CPUs and who had them. 0 or -ENOMEM. */
int ledger__units(struct ledger *l);

#endif /* BPFSIGHT_LEDGER_INT_H */
