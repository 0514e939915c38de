/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call pieces of a trace, nested per thread: what cProfile's numbers need (the named
 * calls directly inside each piece, and whether it runs inside a piece of its own function:
 * recursion). Shared by pyfunc_sum and pyfunc_step_sum.
 */
#ifndef BPFSIGHT_PYFUNC_CALLS_H
#define BPFSIGHT_PYFUNC_CALLS_H

#include <stddef.h>
#include "pyfunc_read.h"

struct pyfunc_piece {
	__u32 pid, tid;
	__u64 ts, dur;
	__u32 func_id, file_id, line;
	__u16 depth;
	__u8 end, flags;
	/* pyfunc_calls__nest's */
	__u64 child_ns; /* the durations of the pieces directly inside it */
	__u8 recursive; /* inside a piece of the same function on its thread */
};

/* What the reports read: the pieces, and the first error (steps: the steps service's). */
struct pyfunc_calls {
	struct pyfunc_piece *v;
	size_t n, cap;
	int err;
};

/* The reports' new, add and free hooks (report.h): a struct pyfunc_calls. */
void *pyfunc_calls__new(void);
void pyfunc_calls__add(void *c, const struct bs_hdr *rec, const struct trace_model *m);
void pyfunc_calls__free(void *c);
/* 1 when A and B are pieces of one function (its name, file and line) of one process. */
int pyfunc_piece__same(const struct pyfunc_piece *a, const struct pyfunc_piece *b);
/*
 * Sort the pieces by process, thread, start and depth and fill their child_ns and recursive:
 * a piece is inside the innermost piece of its thread still open at its start with a smaller
 * depth (the depth the shim counted says the nesting where starts tie). 0 or -ENOMEM.
 */
int pyfunc_calls__nest(struct pyfunc_calls *c);
/*
 * What a report's emit starts with: C's error, else the pieces nested and their functions
 * (process, name, file, line) numbered in the order met: *ROW (malloc'ed, C->n of them) is
 * each piece's. Returns how many functions, or a negative errno.
 */
long pyfunc_calls__rows(struct pyfunc_calls *c, size_t **row);

#endif /* BPFSIGHT_PYFUNC_CALLS_H */
