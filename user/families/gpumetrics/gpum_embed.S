/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gpumetrics family's sampler inside the bpfsight binary (sampler/sampler.h says why it is
 * a program of its own): gpum_spawn.c runs it from a memory file. The Makefile defines
 * GPUM_SAMPLER, its path.
 */
	.section .rodata.bpfsight_gpum_sampler, "a"
	.balign 64
	.globl bpfsight_gpum_sampler_start
bpfsight_gpum_sampler_start:
#ifdef GPUM_SAMPLER
	.incbin GPUM_SAMPLER
#endif
	.globl bpfsight_gpum_sampler_end
bpfsight_gpum_sampler_end:
	.section .note.GNU-stack, "", @progbits
