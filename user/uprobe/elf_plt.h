/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The PLT stubs of an ELF file, named as perf and gdb name them ("malloc@plt"): no symbol
 * covers them, so without this a sample in a stub is credited to whatever symbol precedes
 * the PLT (usually _init, of size 0). x86-64: each stub's `jmp *GOT(%rip)` names the GOT slot,
 * and the slot's relocation (.rela.plt's JUMP_SLOT, .rela.dyn's GLOB_DAT) names the function;
 * .plt's first entry, lazy binding's jump into ld.so, is "_dl_runtime_resolve@plt".
 */
#ifndef BPFSIGHT_ELF_PLT_H
#define BPFSIGHT_ELF_PLT_H

#include <gelf.h>
#include <linux/types.h>

struct elf_plt_stub {
	__u64 vaddr;
	__u32 size;
	char *name; /* "malloc@plt", allocated */
};

/* The PLT sections' address ranges and the stubs in them (sorted by address). */
struct elf_plt {
	struct {
		__u64 lo, hi;
	} secs[4];
	int nsecs;
	struct elf_plt_stub *stubs;
	size_t n;
};

/* Read ELF's PLT into P (zeroed first): 0, or -ENOMEM. A file without one has none. */
int elf_plt__read(Elf *elf, struct elf_plt *p);
/* The stub holding VADDR, or NULL. */
const struct elf_plt_stub *elf_plt__at(const struct elf_plt *p, __u64 vaddr);
/* The start of the first PLT section above START and at or below VADDR, 0 when none. */
__u64 elf_plt__boundary(const struct elf_plt *p, __u64 start, __u64 vaddr);
void elf_plt__free(struct elf_plt *p);

#endif /* BPFSIGHT_ELF_PLT_H */
