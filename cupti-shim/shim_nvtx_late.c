// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NVTX for a shim injected into a running process (shim_ptrace.c): what can be done late.
 *
 * NVTX v3 is header-only: every shared object (and the program) that uses it has its own
 * instance, nvtxGlobals_v3 (its state and function table), which its first NVTX call fills
 * once, from NVTX_INJECTION64_PATH; without it every slot is set to NULL (no-op) for good.
 * Such an instance can still be instrumented: its nvtxGetExportTable_v3 hands out the
 * table's slots (the callbacks export table) at any time, which is all
 * InitializeInjectionNvtx2 needs. Both are hidden symbols: only .symtab has them, so this
 * reaches the objects that were not stripped. Only instances whose initialization is
 * COMPLETE are taken: one not yet initialized would, at its first call of an API we do not
 * fill, null every slot (ours included) or, if we marked it complete, call its own
 * initializer forever; such an instance is watched, and taken once its own first call has
 * initialized it (that call and those of the next poll are not recorded). Objects loaded
 * later (dlopen) are walked when the loader's count of loads changes. It runs on the poller
 * thread, outside the poller's lock (the entry point takes it), from when a tracer first
 * wants NVTX; docs/NVTX.md says what is left.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "shim_nvtx.h"

#define MAX_INSTANCES	    64
#define NVTX_STATE_COMPLETE 2 /* nvtxInit.h: NVTX_INIT_STATE_COMPLETE */

/* The instances found (kept across calls: each is taken once). */
static struct {
	uintptr_t get;		      /* its nvtxGetExportTable_v3 */
	volatile unsigned int *state; /* its nvtxGlobals_v3.initState */
	bool done;
} inst[MAX_INSTANCES];
static unsigned int ninst;
static unsigned long long seen_adds; /* dl_iterate_phdr's count of objects ever loaded */

struct late {
	const char *self; /* our own file: skipped */
};

/* The ELF addresses of SYMS[0..1] in PATH's .symtab (0 when absent or ambiguous). */
static void symtab_find(const char *path, const char *const syms[2], uint64_t out[2])
{
	unsigned int seen[2] = { 0, 0 };
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	struct stat st;
	size_t size;
	void *map;
	int fd;

	out[0] = out[1] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(*eh)) {
		close(fd);
		return;
	}
	size = (size_t)st.st_size;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	eh = map;
	/* Every offset is checked against the file's size: a file is not trusted to be whole. */
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
	    (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
		goto out;
	sh = (const Elf64_Shdr *)((const char *)map + eh->e_shoff);
	for (unsigned int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *str;
		const Elf64_Sym *sym;
		size_t nsym;

		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
			continue;
		str = &sh[sh[i].sh_link];
		if (str->sh_offset > size || str->sh_size > size - str->sh_offset)
			continue;
		sym = (const Elf64_Sym *)((const char *)map + sh[i].sh_offset);
		nsym = sh[i].sh_size / sizeof(*sym);
		for (size_t k = 0; k < nsym; k++) {
			const char *name = (const char *)map + str->sh_offset + sym[k].st_name;
			size_t left = str->sh_size - sym[k].st_name;

			if (sym[k].st_name >= str->sh_size || !sym[k].st_value)
				continue;
			for (int j = 0; j < 2; j++) {
				size_t len = strlen(syms[j]);

				if (left > len && !memcmp(name, syms[j], len + 1)) {
					out[j] = sym[k].st_value;
					seen[j]++;
				}
			}
		}
	}
out:
	munmap(map, size);
	for (int j = 0; j < 2; j++)
		if (seen[j] != 1)
			out[0] = out[1] = 0; /* two instances in one file: which table is whose? */
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char *const syms[2] = { "nvtxGetExportTable_v3", "nvtxGlobals_v3" };
	struct late *l = arg;
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
	uintptr_t get;
	uint64_t at[2];

	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
		seen_adds = info->dlpi_adds;
	if (ninst >= MAX_INSTANCES || (l->self && !strcmp(path, l->self)) || path[0] != '/')
		return 0;
	symtab_find(path, syms, at);
	if (!at[0] || !at[1])
		return 0;
	get = info->dlpi_addr + at[0];
	for (unsigned int i = 0; i < ninst; i++)
		if (inst[i].get == get)
			return 0; /* found by an earlier walk */
	inst[ninst].get = get;
	/* The state word is the first field of nvtxGlobals_t. */
	inst[ninst++].state = (volatile unsigned int *)(info->dlpi_addr + at[1]);
	return 0;
}

/* Objects were loaded since the last walk (a cheap look at the first object's counter). */
static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

unsigned int shim_nvtx_late__inject(bool first)
{
	struct late l = { 0 };
	unsigned long long adds = 0;
	unsigned int done = 0;
	Dl_info self;

	dl_iterate_phdr(count_adds, &adds);
	if (first || adds != seen_adds) {
		if (dladdr((void *)shim_nvtx_late__inject, &self))
			l.self = self.dli_fname;
		/* The loader's lock is held during the walk: the entry point (it may dlopen) after. */
		dl_iterate_phdr(on_object, &l);
	}
	/* An instance is taken once its own first call has initialized it (no tool found). */
	for (unsigned int i = 0; i < ninst; i++) {
		if (inst[i].done || *inst[i].state != NVTX_STATE_COMPLETE)
			continue;
		inst[i].done = true;
		done += InitializeInjectionNvtx2((NvtxGetExportTableFunc_t)inst[i].get) ? 1 : 0;
	}
	return done;
}
