/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Functions of a stripped file found by the name string their code loads. The CUDA runtime
 * linked statically into cuBLAS, cuBLASLt, cuDNN, NCCL or a stripped program exports no
 * symbol, but every runtime entry point (cudaMemsetAsync, cudaMemsetAsync_ptsz...) passes
 * its own name ("cudaMemsetAsync\0" in .rodata) to the API-callback machinery that CUPTI
 * hooks, with a RIP-relative lea. So: the names in .rodata, the one lea in .text that loads
 * each, and the function around that lea from .eh_frame_hdr (whose FDE must cover it).
 * A name loaded by more than one function is ambiguous and not reported. x86-64 only.
 */
#ifndef BPFSIGHT_ELF_STRREF_H
#define BPFSIGHT_ELF_STRREF_H

#include <linux/types.h>
#include <stddef.h>

struct elf_strref_stats {
	__u64 rodata_bytes, text_bytes; /* what was searched (text only when a name was found) */
	__u32 strings;			/* occurrences of the names in .rodata */
	__u32 names;			/* distinct names among them */
	__u32 ambiguous;		/* names loaded by more than one function */
};

/*
 * In the ELF file open at FD: for each NAMES[i] starting with PREFIX, VADDR[i] = the ELF
 * address of the function that loads the string, else 0. Returns how many were found (0
 * for a file without section headers or .eh_frame_hdr, or where .rodata holds fewer than
 * MIN of the names: .text is then not searched), or -errno. STATS, if not NULL, says what
 * the search cost.
 */
int elf_strref__find(int fd, const char *prefix, const char *const *names, size_t n, size_t min,
		     __u64 *vaddr, struct elf_strref_stats *stats);

#endif /* BPFSIGHT_ELF_STRREF_H */
