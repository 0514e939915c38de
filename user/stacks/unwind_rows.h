/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The step between the sections of a file and its table (unwind_table.c, unwind_elf.c). */
#ifndef BPFSIGHT_UNWIND_ROWS_H
#define BPFSIGHT_UNWIND_ROWS_H

#include <stddef.h>
#include "eh_frame.h"
#include "unwind_build.h"

/*
 * The rows of the FDEs of sections SECS (in order of preference: where two FDEs overlap, the
 * earlier section's wins) whose [pc, end) KEEP accepts, into T (rows, and counts added to
 * T->stats). 0 or -ENOMEM.
 */
int unwind_table__rows(const struct eh_section *secs, size_t nsecs,
		       int (*keep)(__u64 pc, __u64 end, void *arg), void *arg,
		       struct unwind_table *t);

#endif /* BPFSIGHT_UNWIND_ROWS_H */
