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
	"(no stack): allocations under --stacks=mem's size (1 MiB unless given; mem:0 gives "      \
	"every one its stack), or recorded with --stacks=none."
#define MEM_NO_STACK_GROW "(no stack): growth samples recorded with --stacks=none."

/*
 * mem_leaks: a site grows when its live bytes went up at this share of the step (or window)
 * boundaries or more, over at least MEM_GROW_MIN_STEPS of them.
 */
#define MEM_GROW_SHARE	   0.8
#define MEM_GROW_MIN_STEPS 3
/* Without steps (steps.h), a device's records split into this many windows of equal time. */
#define MEM_GROW_WINDOWS 10

#endif /* BPFSIGHT_MEM_REPORT_H */
