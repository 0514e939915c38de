/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The steps of a trace, one service for every per-step report (torch_step_sum, gemm_step_sum,
 * pyfunc_step_sum, mem_leaks): fed the trace's records once, it answers "the steps of process
 * PID", sorted spans, each saying which source gave it.
 *
 * The sources are the families' (struct family.steps: torch's steps, NVTX ranges of a name,
 * cudaProfilerStart to Stop, torch.profiler's ProfilerStep#N), each over its own records. Per
 * process, the steps are those of the first source that gives it any, in this order: the
 * default sources (STEPS_DEFAULT: torch's steps, what every recording with -t torch writes), in
 * registry order; then the one `--steps=KIND[:ARG]` names (stats, report). A process has the
 * steps of one source only, never a mix. docs/USAGE.md ("stats") for users.
 */
#ifndef BPFSIGHT_STEPS_H
#define BPFSIGHT_STEPS_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"
#include "trace_model.h"

struct family_steps;

/* One step of a process: [ts, end). */
struct step_span {
	__u32 pid, tid; /* tid: the thread whose records mark it */
	/*
	 * Its number: the source's own (a torch step's, N of ProfilerStep#N: STEPS_NUMBERED),
	 * else 1, 2, ... in the process, by start.
	 */
	__u64 step;
	__u64 ts, end; /* CLOCK_MONOTONIC ns */
	__u32 name_id; /* string: what its source calls it (a scope, a range); 0: none */
	const struct family_steps *src; /* the source that gave it */
	__u64 seq;			/* the order the trace gave it in, from 0 (the service's) */
};

/* A source's hook hands each step it completes here: 0, or -ENOMEM. */
typedef int (*steps_emit_fn)(void *arg, const struct step_span *s);

#define STEPS_DEFAULT  0x1 /* tried first for every process, whatever --steps names */
#define STEPS_NUMBERED 0x2 /* its steps carry their numbers (else numbered 1, 2, ... by start) */

/*
 * A step source of a family (struct family.steps, an array ending with a zeroed entry), over
 * the family's own records. Named by `--steps=KIND` or `--steps=KIND:ARG`.
 */
struct family_steps {
	const char *kind; /* "nvtx", "cudaProfilerApi" */
	const char *arg;  /* the value's name when the kind takes one ("NAME"), else NULL */
	const char *desc; /* what its steps are, for --help and errors */
	__u32 flags;	  /* STEPS_* */
	/* Its state for one walk, ARG the value (NULL: none). May be NULL: stateless, ST NULL. */
	void *(*new)(const char *arg);
	/*
	 * Every record the reports see, in file order: each step REC completes goes to EMIT (a
	 * step's src and seq are the service's). 0, or -ENOMEM.
	 */
	int (*add)(void *st, const struct bs_hdr *rec, const struct trace_model *m,
		   steps_emit_fn emit, void *arg);
	void (*free)(void *st);
};

struct steps;

/*
 * --steps's value ASK (NULL: the default sources only) checked: 0, or -EINVAL after saying
 * what is wrong, prefixed OPT ("--steps").
 */
int steps__check(const char *ask, const char *opt);
/* The service for one walk, ASK checked; NULL when out of memory. */
struct steps *steps__new(const char *ask);
/* Every record, in file order, before the reports' add. Errors stick (steps__finish's). */
void steps__add(struct steps *s, const struct bs_hdr *rec, const struct trace_model *m);
/* The walk ended: each process's steps chosen and numbered. 0, or -ENOMEM. */
int steps__finish(struct steps *s);
/* After steps__finish: the steps of process PID, sorted by start (*N of them; NULL: none). */
const struct step_span *steps__of(const struct steps *s, __u32 pid, size_t *n);
/* Every process's steps, in the order the trace gave them (*N of them). */
const struct step_span *const *steps__all(const struct steps *s, size_t *n);
/* The step of V (N, sorted by start) that TS falls in: the last to start by TS; -1: none. */
long steps__find(const struct step_span *v, size_t n, __u64 ts);
/*
 * The source --steps named besides the default ones ("nvtx:train_step"), for a report's
 * notes; NULL when it named none (or a default one).
 */
const char *steps__named(const struct steps *s);
void steps__free(struct steps *s);

/* "torch, ProfilerStep, nvtx:NAME, cudaProfilerApi": the sources, for --help and errors. */
void steps__list(char *buf, size_t len);

#endif /* BPFSIGHT_STEPS_H */
