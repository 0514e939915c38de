/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight top`'s counters: the recording's record stream (the recorder's sink, on its
 * thread) folded into counters per thread for the interval under way, cut into frames (on the
 * screen's thread) that say, per process and thread, what each column shows. CPU% is top's
 * own (the threads' on-CPU time from /proc); the other columns are the families'
 * (top_family.h). docs/USAGE.md#top says what each column means.
 *
 * top (user/cli/cmd_top.c) is a third command of the recording's option table (it takes
 * monitor's family options and defaults: RECORD_CMD_TOP) and runs recorder__run as monitor
 * does, with record_opts.sink = top__record (top_state.c) and no file; without -t it records
 * the families that have columns.
 * - Counters: per thread (and per process, tid 0, for what no thread owns) and per column,
 *   for the interval under way. A column is a share of the time (top__add_span: the part of
 *   an event inside the interval), a rate, or the longest event with a label; TOP_POLLED
 *   columns (gil's, from the GIL_AGG snapshots each poll writes) are divided by the time
 *   between the polls they came in. CPU% is each thread's on-CPU ns from
 *   /proc/PID/task/TID/schedstat, read at each cut. Processes and threads come from the
 *   lifecycle records, their names from a trace model fed every record (row_name in
 *   top_cut.c is the one place to ask for another name).
 * - Frames: the screen's thread (top_ui.c) cuts a frame every interval (top__cut,
 *   top_cut.c): values as shown, each process the sum of its threads, the losses since the
 *   last cut; exited threads are shown once more, then dropped. top_screen.c lays a frame out
 *   in the terminal's width (names narrow first, then the text columns go, then numbers from
 *   the right) and sorts it; the same text is a batch frame. top_term.c owns the terminal:
 *   raw keys, the alternate screen, SIGWINCH through a signalfd (every thread blocks it),
 *   stderr into a pipe while the screen is up (printed after). q stops the recording as
 *   Ctrl-C does (SIGINT to itself, which recorder.c's stop thread takes).
 * - Replay: `bpfsight top FILE` (top_replay.c) feeds a file's records to the same counters
 *   (no /proc, so no CPU%) and cuts a frame each time the records' clock passes an interval;
 *   fuzz_decode fuzzes it.
 */
#ifndef BPFSIGHT_TOP_H
#define BPFSIGHT_TOP_H

#include <stdio.h>
#include <linux/types.h>
#include "records.h"

struct family;
struct record_opts;
struct top_column;

#define TOP_MAX_COLS 16 /* CPU% and the families' columns */
#define TOP_NAME_LEN 64 /* a thread's name as shown, with its NUL: a Python one is long */

/* One column of the view: the family's, or CPU% (F NULL). */
struct top_col {
	const struct top_column *c;
	const struct family *f;
	int fi; /* F's index in families[], -1 for CPU% */
};

#define TOP_ROW_TARGET 0x1 /* a process given with -p: shown even when idle */
#define TOP_ROW_EXITED 0x2 /* it exited during the interval (shown once more) */
#define TOP_ROW_IDLE   0x4 /* nothing in any column this interval */

/* One process (tid 0) or thread, as the interval left it. */
struct top_row {
	__u32 pid, tid;
	__u32 flags; /* TOP_ROW_* */
	char name[TOP_NAME_LEN];
	double val[TOP_MAX_COLS];	 /* % (share), per second (rate), ns (longest) */
	const char *label[TOP_MAX_COLS]; /* TOP_LONGEST: what took that long */
};

#define TOP_FUNC_TEXT 160 /* a function view row's "func (file:line)", with its NUL */

/* A function (or Python line) of the function view, py-spy top's row: its samples. */
struct top_func {
	__u64 own, total;	  /* the interval's: innermost frame of, anywhere on the stack of */
	__u64 own_all, total_all; /* the same since the start (or the last reset, r) */
	char text[TOP_FUNC_TEXT]; /* "inner_a (train.py:46)"; by function "inner_a (train.py)" */
};

#define TOP_FUNCS_BY_LINE 0 /* top_frame.funcs[]: a row per Python line (py-spy's default) */
#define TOP_FUNCS_BY_FUNC 1 /* a row per function whatever its line (py-spy top's L) */

/*
 * The function view of a frame (top_funcs.c): every traced process's CPU samples summed per
 * function (func_sum.h): each stack's Python frames when it has some, else its native ones.
 */
struct top_funcs_frame {
	struct top_func *v; /* the busiest functions by each of the four columns, in no order */
	size_t n, cap;
	__u64 samples, samples_all; /* the interval's and since the start (or r) */
	__u64 nostack;		    /* of the interval's: those whose user stack was not read */
	__u64 period_ns;	    /* the on-CPU time a sample stands for (1 s / --sample-rate) */
};

struct top_frame {
	__u64 now, span_ns; /* when it was cut, and the interval it covers */
	const struct top_col *cols;
	__u32 ncols;
	__u32 shown;	      /* bit i: column i has had values (columns never fed stay hidden) */
	struct top_row *rows; /* every process, each followed by its threads */
	size_t nrows, cap;
	__u32 nprocs, nthreads;
	double records_per_s;	   /* records the recording sent this interval, per second */
	__u64 lost, lost_interval; /* events lost since the start, and in this interval */
	char lost_why[96];	   /* the causes of this interval's losses: "cuda: ringbuf_full" */
	/* The function view (top__want_functions), by line and by function; n 0 otherwise. */
	struct top_funcs_frame funcs[2];
	int funcs_cut; /* the function view was wanted at this cut: funcs[] has its rows */
	int sampled;   /* CPU samples came since the start: the function view has something */
	/* The ledger view (top__want_ledger): the interval's lines, as the verdict words them */
	char *ledger;
	size_t ledger_len;
	int ledger_cut; /* wanted at this cut */
};

/*
 * The ledger view's machinery (the verdict's ledger, docs/USAGE.md "How the verdict is made"),
 * handed to top by its command (top sees no other command's code): a ledger fed the
 * interval's records, then its critical unit's lines written over [FROM, TO).
 */
struct trace_model;
struct top_ledger_ops {
	void *(*new)(void);
	void (*add)(void *st, const struct bs_hdr *rec, const struct trace_model *m);
	/* The lines into F; how many (0: nothing to say yet). */
	int (*lines)(void *st, const struct trace_model *m, __u64 from, __u64 to, FILE *f);
	/* A thread's own clocks at the interval's start (END 0) or end (ledger__clock). */
	void (*clock)(void *st, __u32 pid, __u32 tid, __u64 ts, __u64 cpu_ns, __u64 delay_ns,
		      int end);
	void (*free)(void *st);
};

struct top;

/* The counters of a recording with options O (its families' columns). NULL without memory. */
struct top *top__new(const struct record_opts *o);
void top__free(struct top *t);
/*
 * The records come from a file (top_replay.c), not a live recording: nothing is read from
 * /proc, so there is no CPU% column; the frames are cut at the records' times.
 */
void top__replay(struct top *t);
/*
 * A replay's first interval starts at START (0: the file's first record), a flight-recorder
 * dump's at its window's start (what it knew before, its processes, comes first); its polled
 * columns (TOP_POLLED) count their first snapshots from POLL_START (0: START): a dump's count
 * from the last poll before its window.
 */
void top__replay_from(struct top *t, __u64 start, __u64 poll_start);
/* The recorder's sink (struct record_opts.sink): one record, as a trace file would get it. */
void top__record(void *t, const struct bs_hdr *rec);
/* The recording went live (struct record_opts.sink_live): the first interval starts now. */
void top__live(void *t);
/* When the recording went live (CLOCK_MONOTONIC ns; a file's: its first record). 0 before. */
__u64 top__live_since(struct top *t);
/*
 * Cut the interval under way at NOW into FR (its memory reused from the previous cut), start
 * the next. Rows are in no order (top_screen.c sorts them). 0, or -ENOMEM.
 */
int top__cut(struct top *t, __u64 now, struct top_frame *fr);
void top_frame__free(struct top_frame *fr);
/*
 * Cut the function view into each frame from now on (ON), or not: summing the samples per
 * function goes on either way, it is their rows that cost.
 */
void top__want_functions(struct top *t, int on);
/* The ledger view: its machinery (NULL: none), and whether its lines are cut from now on. */
void top__set_ledger(struct top *t, const struct top_ledger_ops *ops);
void top__want_ledger(struct top *t, int on);
/* The function view's times and shares start over (py-spy top's R). */
void top__reset_functions(struct top *t);
/* A replay's sampling period, from its file's header (a live one's is the family's). */
void top__set_sample_period(struct top *t, __u64 period_ns);
/* Column I's --sort key ("cpu", "gil", ...), for parsing and messages. */
const char *top_col__key(const struct top_col *c);
/* CPU%: top's own column, from each thread's on-CPU time (top_cpu.c). */
extern const struct top_column top_cpu_column;
/* NOW: top -p's own, what each thread is in now (top_now.c). */
extern const struct top_column top_now_column;
/* RANK and ROLE: what a process is to the job, where known (top_role.c). */
extern const struct top_column top_rank_column, top_role_column;
/* The view's columns (the same in every frame) and how many. */
const struct top_col *top__columns(struct top *t, __u32 *n);

#endif /* BPFSIGHT_TOP_H */
