/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables, the contract between the user-space builder (user/stacks/unwind_table.c:
 * .eh_frame and .debug_frame turned into rows, once per ELF file, keyed by its build id) and
 * the native walk in BPF (bpf/stack_native.bpf.h), which reads them from shared maps to
 * unwind code built without frame pointers (docs/STACKS.md, "Unwind tables").
 *
 * A file's table is its rows sorted by pc; a row holds from its pc up to the next row's. The
 * walk finds the last row with row.pc <= the frame's address in the file (ELF virtual
 * address: the runtime address minus the mapping's load bias), then:
 *   CFA = (kind == BS_UNW_CFA_RBP ? rbp : rsp) + cfa_off
 *   return address = *(CFA - 8)                 (x86-64: every CIE this table accepts)
 *   caller's rbp   = rbp_off ? *(CFA + rbp_off) : rbp
 *   caller's rsp   = CFA
 * A row of another kind says what to do instead (below); a stop kind ends the stack there,
 * and the stop is said with its reason, never followed into a wrong frame.
 */
#ifndef BPFSIGHT_UNWIND_TABLE_H
#define BPFSIGHT_UNWIND_TABLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct bs_unwind_row {
	__u32 pc;      /* first ELF virtual address the row covers (files above 4 GiB: no table) */
	__s32 cfa_off; /* CFA = the kind's register + cfa_off */
	__s16 rbp_off; /* the caller's rbp is saved at CFA + rbp_off; 0: rbp keeps its value */
	__u8 kind;     /* BS_UNW_* */
	__u8 _pad;
};

#define BS_UNW_CFA_RSP 0 /* CFA = rsp + cfa_off */
#define BS_UNW_CFA_RBP 1 /* CFA = rbp + cfa_off */
/*
 * A PLT entry's expression (binutils' lazy PLT): CFA = rsp + 8, or rsp + 16 when
 * (pc & 15) >= cfa_off, the entry's byte after its push: 11 in the classic PLT (the 11th
 * byte on), 10 in the IBT PLT, 5 in the MPX one. rbp_off is 0.
 */
#define BS_UNW_PLT 2
/* A signal frame (__restore_rt, an 'S' augmentation): the registers come from the
 * ucontext_t the kernel put at rsp (rip, rsp, rbp from its uc_mcontext). */
#define BS_UNW_SIGNAL 3
/* The outermost frame (_start, clone's child: the return address is undefined): the stack is
 * whole. */
#define BS_UNW_END 4
/*
 * GCC's stack realignment (functions that align rsp for AVX: `lea 8(%rsp),%r10; and $-32,
 * %rsp; ...; push %rbp; mov %rsp,%rbp; push %r10`): the CFA is saved below the frame and
 * rbp is the frame's pointer. CFA = *(rbp + cfa_off); the caller's rbp = *(rbp + rbp_off),
 * rbp_off relative to rbp here, not to the CFA (0: saved at rbp itself, the usual case);
 * the return address at CFA - 8 and the caller's rsp = CFA as in every kind. About 1.3% of
 * libtorch_cpu's FDEs and 2.6% of libcublasLt's, its vectorized kernels among them.
 */
#define BS_UNW_CFA_RBP_DEREF 5
/* Stops, each a reason said with the stack (BS_UNW_STOP_* - BS_UNW_STOP_FIRST + 1 in its
 * record's stop field). */
#define BS_UNW_STOP_FIRST 16
#define BS_UNW_STOP_NONE  16 /* no FDE covers the address (a gap between functions) */
#define BS_UNW_STOP_EXPR  17 /* a DWARF expression or register rule a row cannot hold */
#define BS_UNW_STOP_BAD	  18 /* the FDE was malformed: the rows after its error are not trusted */

_Static_assert(sizeof(struct bs_unwind_row) == 12, "the row is part of the BPF maps' layout");

#endif /* BPFSIGHT_UNWIND_TABLE_H */
