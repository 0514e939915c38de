/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where in a function to put its entry (and return) uprobe. x86-64 uprobes on an instruction
 * the kernel emulates (push, nop, jmp, call) cost far less than on one it must single-step
 * out of line, which takes an extra trap per hit (bench/RESULTS.md, "Per-probe cost"). If the
 * prologue, before any branch, reaches an emulated instruction while the stack pointer and
 * the argument registers are still untouched, the probe goes there: entry arguments are
 * still in rdi..r9 and at 8(%rsp), and the return address is still at (%rsp), so a
 * uretprobe on the same spot is correct.
 */
#ifndef BPFSIGHT_PROBE_SITE_H
#define BPFSIGHT_PROBE_SITE_H

#include <linux/types.h>
#include <stddef.h>

enum probe_cost {
	PROBE_EMULATED = 0,    /* the kernel emulates the instruction: cheap */
	PROBE_SINGLE_STEP = 1, /* executed out of line with a single step: dear */
};

struct probe_site {
	__u32 offset;	/* bytes from the function's start */
	__u32 insn_len; /* 0 when the instruction could not be decoded */
	char insn[40];	/* e.g. "push %rbp", "endbr64", "nop", "bytes 48 8d 05 .." */
	enum probe_cost cost;
};

/*
 * Choose the probe site of a function whose first LEN bytes are CODE (64 is plenty). Never
 * fails: when no better site is safe, offset 0 with its cost class. The walk from offset 0
 * steps only over endbr64, mov reg,reg and mov $imm,reg whose destination is neither an
 * argument register (rdi, rsi, rdx, rcx, r8, r9) nor rsp, and stops at the first instruction
 * the kernel emulates (Linux 6.18: push r64 without REX or with REX 0x41, the kernel's nop
 * encodings and opcode 0x90, jmp/call rel, jcc). A site past offset 0 relies on no code
 * jumping back into the skipped bytes (true of compiler prologues). An instruction the
 * kernel refuses to probe at all (es/cs/ss/ds/lock prefixes, int3, syscall) is reported as
 * single-step: the attach itself will fail.
 */
void probe_site__choose(const __u8 *code, size_t len, struct probe_site *out);
const char *probe_cost__name(enum probe_cost c); /* "emulated", "single-step" */
/* Length of the x86-64 instruction at CODE (LEN bytes available); 0 when not decodable. */
size_t probe_site__insn_len(const __u8 *code, size_t len);

#endif /* BPFSIGHT_PROBE_SITE_H */
