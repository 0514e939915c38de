// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Micro target of the per-probe benchmark (bench/run_bench.py): three functions that do
 * nothing, each a different kind of probe site for the kernel's uprobes.
 *
 *   pt_push  first instruction `push %rbp`: the kernel emulates it, no single-step
 *   pt_lea   first instruction `lea 0x1(%rdi),%rax`: not emulated, so every hit is
 *            single-stepped out of line (an extra trap)
 *   pt_usdt  a systemtap USDT site (bpfsight_bench:site, one-byte nop, no semaphore)
 *
 * The first two are written in assembly so that no compiler, flag (-fcf-protection adds
 * endbr64) or optimisation level can change their first instruction.
 *
 *   probe_target [-m MS] [-r ROUNDS] [-o FILE] [push|lea|usdt]...   (bench_loop.h)
 */
#include <sys/sdt.h>
#include "bench_loop.h"

__asm__(".text\n"
	".globl pt_push\n"
	".type pt_push, @function\n"
	"pt_push:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 0x1(%rdi), %rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size pt_push, .-pt_push\n"
	".globl pt_lea\n"
	".type pt_lea, @function\n"
	"pt_lea:\n"
	"	lea 0x1(%rdi), %rax\n"
	"	ret\n"
	".size pt_lea, .-pt_lea\n");

long pt_push(long x);
long pt_lea(long x);

__attribute__((noinline)) long pt_usdt(long x)
{
	STAP_PROBE1(bpfsight_bench, site, x);
	return x + 1;
}

int main(int argc, char **argv)
{
	static const struct bench_fn fns[] = {
		{ "push", pt_push, pt_push },
		{ "lea", pt_lea, pt_lea },
		/* The nop is pt_usdt's first instruction (checked by run_bench.py's int3 test
		 * with the floor's probe on it). */
		{ "usdt", pt_usdt, pt_usdt },
	};

	return bench_loop_main(argc, argv, fns, 3);
}
