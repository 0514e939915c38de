/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The verdict `bpfsight stats` opens with (and `record` ends with, in one line): where the
 * traced threads' time went, as claims, each with its number and the report that shows it,
 * in the spirit of nsys's expert-system rules. The rules are the families' (struct
 * family.verdict, family.h): each reads its own reports' tables (or state) and makes claims
 * of a kind below; this file only ranks them and prints them.
 *
 * Kinds are in the order a headline is chosen: the first kind with a claim that holds (its
 * family's threshold was passed) names the verdict, its largest claim says why.
 */
#ifndef BPFSIGHT_VERDICT_H
#define BPFSIGHT_VERDICT_H

#include <stdio.h>
#include <linux/types.h>
#include "records.h"

struct table;
struct trace_model;

enum verdict_kind {
	VERDICT_TRIGGER,   /* a flight-recorder dump: the event its --trigger fired on */
	VERDICT_HANG,	   /* a hang: ranks wait in a collective another rank never entered */
	VERDICT_STRAGGLER, /* ranks wait in collectives much of their time for a slower rank */
	VERDICT_MEMORY,	   /* memory at risk: out of memory, a leak, a fragmented cache */
	VERDICT_GPU,	   /* GPU-bound: a GPU busy most of its time */
	VERDICT_INPUT,	   /* input-bound: a trainer waits for its next batch much of its time */
	VERDICT_GIL,	   /* GIL-bound: a thread waited for the GIL much of its time */
	VERDICT_LAUNCH,	 /* launch-bound: a GPU idle between short kernels, waiting for launches */
	VERDICT_SYSCALL, /* blocked in system calls */
	VERDICT_OFFCPU,	 /* off-CPU: blocked, or runnable without a CPU */
	VERDICT_FAULT,	 /* fault-bound: CPU in page faults, memory handed back and faulted in */
	VERDICT_CPU,	 /* CPU-bound: a thread on a CPU most of its time */
	VERDICT_MFU,	 /* low MFU: the steps' GEMMs far from the GPU's peak (a symptom: last) */
	/* the ledger's kinds of wait (verdict_ledger.c): what the critical unit's time went to */
	VERDICT_LOCK,	    /* waiting for a lock, condition, queue or event of the program */
	VERDICT_COLLECTIVE, /* waiting in collectives */
	VERDICT_CALLS,	    /* in API calls (CUDA, cuBLAS...) */
	VERDICT_CHILD,	    /* waiting for child processes */
	VERDICT_SLEEP,	    /* sleeping */
	VERDICT_IO,	    /* waiting for I/O readiness */
	VERDICT_NOCPU,	    /* ready to run without a CPU */
	VERDICT_IDLE,	    /* waiting for work */
	VERDICT_BLAS,	    /* CPU GEMMs on a slow BLAS (a ledger's CPU or API time, said why) */
	VERDICT_KINDS,
};

/* What the families account per thread, to find the thread that matters most (the focus). */
enum verdict_time {
	VERDICT_ONCPU,	  /* on a CPU */
	VERDICT_GIL_WAIT, /* waiting for the GIL */
	VERDICT_API,	  /* in CUDA or NCCL calls */
	VERDICT_TIMES,
};

struct verdict;

/*
 * A family's rules (struct family.verdict). NEW/ADD/FREE keep state over the pass every
 * report takes (may be NULL); ACCOUNT, then CLAIMS, run once every report has its table, in
 * registry order: every family accounts before any claims.
 */
struct family_verdict {
	void *(*new)(void);
	void (*add)(void *st, const struct bs_hdr *rec, const struct trace_model *m);
	void (*account)(void *st, struct verdict *v);
	void (*claims)(void *st, struct verdict *v);
	void (*free)(void *st);
	/*
	 * A verdict judged from a server's answers (`stats --from`: no pass over the records):
	 * READS names, comma-separated, every input its rules read there: reports' tables
	 * (gil_sum) and the state ADD keeps, as a table LOAD takes (osrt_thread_calls); a name
	 * ending in '?' only some of its rules read (a detail, a rule of its own): the family is
	 * judged without it, said. The family is judged there when every other input was given. NULL: its rules are not fed from a server yet (said, never silent).
	 */
	const char *reads;
	/*
	 * ADD's state from table T, input NAME of READS (the server's answer): 0 or -errno. What
	 * an input needs of a file that SQL cannot derive from its events' rows (a frame of the
	 * DataLoader's iterator on a stack, the BLAS library of a process, which allocation a
	 * free ended, a thread's ledger) the family adds to the rows as they are rendered: its
	 * struct ex_rows (export_model.h), by the same C its pass runs; its SQL reads them.
	 */
	int (*load)(void *st, const char *name, const struct table *t);
};

/* ---- what rules read ---- */

/* The table of report NAME in this run, NULL when it was not selected. */
const struct table *verdict__table(const struct verdict *v, const char *name);
/* The state of report NAME (struct report.new's; every report runs), for its own family. */
void *verdict__state(const struct verdict *v, const char *name);
const struct trace_model *verdict__model(const struct verdict *v);
/* How long thread TID of PID lived within the trace (its fork and exit, else its edges). */
__u64 verdict__life(const struct verdict *v, __u32 pid, __u32 tid);
void verdict__add_time(struct verdict *v, __u32 pid, __u32 tid, enum verdict_time what, __u64 ns);
__u64 verdict__time(const struct verdict *v, __u32 pid, __u32 tid, enum verdict_time what);
/*
 * The thread the accounts say matters most (the most time on a CPU, waiting for the GIL
 * and in API calls): 0 and its ids, or -ENOENT when nothing was accounted.
 */
int verdict__focus(const struct verdict *v, __u32 *pid, __u32 *tid);
/* "python3 (tid 618, pid 618)" into BUF: the thread's name and ids. */
const char *verdict__thread(const struct verdict *v, __u32 pid, __u32 tid, char *buf, size_t len);
/* The same, named by model M (the verdict's lives only while stats reads the trace). */
const char *verdict__thread_in(const struct trace_model *m, __u32 pid, __u32 tid, char *buf,
			       size_t len);

/*
 * A claim: of KIND, holding (HOLDS: its rule's threshold passed) or only worth saying,
 * SHARE (0..1) of its subject's time (negative: none, a claim about memory), shown by REPORT ("gil_sum", or with the options that
 * show it, "osrt_sum --tid 618"), worded by FMT.
 */
__attribute__((format(printf, 6, 7))) void verdict__claim(struct verdict *v, enum verdict_kind kind,
							  int holds, double share,
							  const char *report, const char *fmt, ...);

/*
 * A detail of the last claim made (whom a thread waited for, what the holder ran): printed
 * under it, unlabelled, SHARE of what that claim measured.
 */
__attribute__((format(printf, 4, 5))) void
verdict__detail(struct verdict *v, double share, const char *report, const char *fmt, ...);

/* ---- what stats does ---- */

struct verdict *verdict__new(const struct trace_model *m, const char *recorded);
void verdict__free(struct verdict *v);
/*
 * A flight-recorder dump: the --trigger that wrote it and whose (TEXT, its options' trigger=)
 * and the record it fired on (CAUSE's type, pid, tid and ts: trigger_event=); the verdict
 * opens with that event, found in the pass.
 */
void verdict__set_trigger(struct verdict *v, const char *text, const struct bs_hdr *cause);
/* Every record of the pass (the families' rules' ADD hooks, threads' lifetimes). */
void verdict__observe(struct verdict *v, const struct bs_hdr *rec);
/* A report the rules may read: its table (NULL when not selected) and state, kept. */
int verdict__set_report(struct verdict *v, const char *name, const struct table *t, void *st);
/*
 * ---- a verdict from a server's answers (stats --from), no pass over the records ----
 * FROM names where (the URL): only the families whose READS were all given are judged
 * (verdict__print says the others). Then each input by verdict__set_report (a table) or
 * verdict__load (a rule's state), the rows' span, the threads' lives and the events per kind.
 */
void verdict__from(struct verdict *v, const char *from);
/* Table T as input NAME of the family whose READS name it (its LOAD): 0, -ENOENT none. */
int verdict__load(struct verdict *v, const char *name, const struct table *t);
/* The first and last records' times (what verdict__observe finds in a pass). */
void verdict__set_span(struct verdict *v, __u64 first, __u64 last);
/* Thread TID of PID forked at BORN and exited at DIED (0: not seen). */
int verdict__set_life(struct verdict *v, __u32 pid, __u32 tid, __u64 born, __u64 died);
/* N events of KIND (dump's), counted to its family: what the trace has to judge. */
void verdict__count(struct verdict *v, const char *kind, __u64 n);
/*
 * The families with events whose rules were not judged (their inputs not given), and the
 * inputs they were judged without, in one line into BUF ("" when all were, or the verdict is a pass's).
 */
const char *verdict__unjudged(const struct verdict *v, char *buf, size_t len);
/* Run the families' rules. */
void verdict__judge(struct verdict *v);
/* The headline in one line ("GIL-bound: ..."), "" when there is nothing to say. */
const char *verdict__headline(const struct verdict *v, char *buf, size_t len);
/* Reports the claims cite, in the order printed: REPORTS[i] for i < the count returned. */
int verdict__cited(const struct verdict *v, const char **reports, int max);
/* A claim as printed (verdict__lines): a detail has no kind and does not hold. */
struct verdict_line {
	int holds, detail;
	const char *kind;   /* "GIL", "" for a detail */
	double share;	    /* 0..1, negative: none */
	const char *report; /* "osrt_sum --tid 618", "" */
	const char *text;
};

/*
 * The claims verdict__print prints in one line each (WIDTH 0, as to a pipe), in its order and
 * under its budget of lines: into OUT (at most MAX). Returns how many; *MORE: those left out.
 */
int verdict__lines(const struct verdict *v, struct verdict_line *out, int max, int *more);
/* "Verdict: nothing to judge: ..." into BUF when no rule made a claim ("" otherwise). */
const char *verdict__nothing(const struct verdict *v, char *buf, size_t len);
/* A kind's label in a claim's line ("GIL", "lock"). */
const char *verdict__kind_label(enum verdict_kind k);
/* What the marks and percentages of the claims mean: the verdict's last line. */
extern const char verdict__legend[];
/* At most 25 lines in WIDTH columns (0 = no limit). Prints nothing without claims. */
void verdict__print(const struct verdict *v, int width, FILE *f);

#endif /* BPFSIGHT_VERDICT_H */
