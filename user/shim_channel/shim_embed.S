/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cupti-shim inside the bpfsight binary: bpfsight is one static file copied to GPU
 * machines, and launch mode and `bpfsight shim` write the library out from here
 * (user/shim_channel/shim_blob.c). The Makefile defines SHIM_SO (its path) when the shim is built;
 * without it the blob is empty and gpu/nvtx say the build has no shim.
 */
	.section .rodata.bpfsight_shim, "a"
	.balign 64
	.globl bpfsight_shim_start
bpfsight_shim_start:
#ifdef SHIM_SO
	.incbin SHIM_SO
#endif
	.globl bpfsight_shim_end
bpfsight_shim_end:
	.section .note.GNU-stack, "", @progbits
