/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One FDE's call-frame instructions run into rows of bpf/unwind_table.h: the CIE's initial
 * instructions, then the FDE's, a row at each address where the rules change. Only what the
 * x86-64 walk restores is kept (the CFA, rbp, the return address); what a row cannot hold
 * becomes a stop (STOP_EXPR), and an error in the instructions ends the FDE's rows with a
 * STOP_BAD row at the address where it happened (an FDE the section's end cuts short: all of it).
 */
#ifndef BPFSIGHT_CFI_ROWS_H
#define BPFSIGHT_CFI_ROWS_H

#include <linux/types.h>
#include <stddef.h>
#include "eh_frame.h"
#include "unwind_table.h"

/* x86-64's DWARF register numbers */
#define DW_X86_64_RBP 6
#define DW_X86_64_RSP 7
#define DW_X86_64_RA  16

/* Rows being built, sorted by pc as they are added. */
struct row_buf {
	struct bs_unwind_row *rows;
	size_t n, cap;
};

/*
 * Add a row at PC: a row already at PC is replaced, and a row that says what the one before
 * it says is not added (it would only extend it). 0, -E2BIG past UNWIND_MAX_ROWS, or -ENOMEM.
 */
int row_buf__push(struct row_buf *b, __u32 pc, __u8 kind, __s32 cfa_off, __s16 rbp_off);

/* What running an FDE met (flags). */
#define CFI_ROWS_BAD  0x1 /* an error: its rows end in STOP_BAD */
#define CFI_ROWS_EXPR 0x2 /* a row a table cannot hold (STOP_EXPR) */
/* It sets up a frame pointer as compilers' prologue does (push %rbp; mov %rsp,%rbp): CFA =
 * rbp + 16, the caller's rbp at CFA - 16, somewhere in the function. */
#define CFI_ROWS_FP 0x4
/* A PLT, the outermost frame or a signal frame: code no compiler gives a frame pointer. */
#define CFI_ROWS_SPECIAL 0x8
/* It makes a frame: its CFA moves from rsp + 8, or it saves rbp (a stub that only jumps does
 * neither, and needs no frame pointer to be walked past). */
#define CFI_ROWS_FRAME 0x10

/*
 * Append the rows of FDE F (of CIE C, in section S) to OUT, from F->pc up to F->end
 * (exclusive: the caller says what follows). Flags, or row_buf__push's error.
 */
int cfi_rows__fde(const struct eh_section *s, const struct eh_cie *c, const struct eh_fde *f,
		  struct row_buf *out);

#endif /* BPFSIGHT_CFI_ROWS_H */
