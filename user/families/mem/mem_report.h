/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The mem family's stats reports (docs/MEMORY.md, "Reports") and the rules of the verdict on
 * them, one file each: mem_sum, mem_peak, mem_leaks, mem_growth; mem_verdict.c.
 */
#ifndef BPFSIGHT_MEM_REPORT_H
#define BPFSIGHT_MEM_REPORT_H

#include "report.h"
#include "verdict.h"

extern const struct report mem_sum, mem_peak, mem_leaks, mem_growth;
extern const struct family_verdict mem_verdict;

/* What a site without a stack is called in the reports (a note under them says why). */
#define MEM_NO_STACK "(no stack)"
#define MEM_NO_STACK_ALLOC                                                                         \
	"(no stack): allocations recorded with --stacks=none, under --stacks=mem's size with "     \
	"--mem-sample-rate=none, or whose stack was lost."
#define MEM_NO_STACK_GROW "(no stack): growth samples recorded with --stacks=none."
#define MEM_BEFORE_STACKS_NOTE                                                                     \
	"(before stacks): allocations made while the recorder attached (-p: its first look at "    \
	"the job's files), before it took stacks."
/* The notes a report's rows call for: mem_site__set's answers, or'ed. */
void mem_site_notes(struct table *t, int unstacked, const char *no_stack);
/* Under a table whose rows have sampled allocations (struct bs_mem_alloc.sample_rate). */
#define MEM_SAMPLED_NOTE                                                                            \
	"Bytes and blocks by line are estimates where a row has Sampled allocations: blocks under " \
	"--stacks=mem's size carry a stack by sampled bytes (--mem-sample-rate), each counted for " \
	"the bytes it stands for; totals, peaks and rows without samples are exact."

/*
 * mem_leaks: a site grows when its live bytes fell at no more than 1 - MEM_GROW_SHARE of the
 * step (or pass, or window) boundaries, went up at MEM_GROW_MIN_STEPS and a third of them or
 * more, and it kept half of what it grew by (mem_leaks_report.c, judge_row).
 */
#define MEM_GROW_SHARE	   0.8
#define MEM_GROW_MIN_STEPS 3
/* Without steps (steps.h), a device's records split into this many windows of equal time. */
#define MEM_GROW_WINDOWS 10

#endif /* BPFSIGHT_MEM_REPORT_H */
