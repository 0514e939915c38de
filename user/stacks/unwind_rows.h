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

/*
 * The file's entry point ENTRY, when no FDE covers it, is the outermost frame: an END row
 * there, up to the next row (or SEG_END, the end of its code segment). ld.so's entry code
 * (_start, _dl_start_user) has no CFI, and every stack of a process's first instructions
 * (the loader mapping the libraries) ends there. 0 or -ENOMEM.
 */
int unwind_table__entry_end(struct unwind_table *t, __u64 entry, __u64 seg_end);

#endif /* BPFSIGHT_UNWIND_ROWS_H */
