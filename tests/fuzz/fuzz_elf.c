// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for what root parses in every file a traced process maps: the ELF symbol
 * reader (user/uprobe/elf_syms.c, elf_file.c, elf_plt.c), the .gnu_debuglink lookup, USDT
 * notes and their argument specs (usdt_notes.c) and probe-site decoding (probe_site.c), with
 * the demangler's budget on every symbol name.
 *   build/tests/fuzz_elf -runs=100000 CORPUS tests/fuzz/seeds-elf
 *
 * Input: u32 SPLIT, then the program's bytes (SPLIT of them, at most the rest), then a debug
 * file's: the program is written as DIR/prog, the debug file as DIR/d.debug (a program
 * whose .gnu_debuglink names "d.debug" looks it up there). Every symbol found is looked up by
 * address and by name, its first 64 bytes decoded as a probe site (whose offset must lie in
 * them); every USDT note's arguments are encoded; the input is decoded as code too. ASan and
 * UBSan are the other checks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elf_syms.h"
#include "probe_site.h"
#include "usdt_notes.h"

static char dir[64], prog[96], dbg[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/fuzz_elf.%d", base, (int)getpid());
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(dbg, sizeof(dbg), "%s/d.debug", dir);
	mkdir(dir, 0700);
	return 0;
}

static void put(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		abort();
	if (n && fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static int each_sym(const struct elf_sym *sym, void *arg)
{
	const struct elf_syms *s = arg;
	struct elf_sym back;
	char name[4096];
	__u8 code[64];
	struct probe_site site;

	demangle(sym->name, name, sizeof(name));
	elf_syms__at(s, sym->vaddr, &back);
	elf_syms__find(s, sym->name, &back);
	if (!elf_syms__read(s, sym->vaddr, code, sizeof(code))) {
		probe_site__choose(code, sizeof(code), &site);
		if (site.offset >= sizeof(code))
			abort();
	}
	return 0;
}

/* The names-only table (the uprobe manager's look) finds what the whole one finds. */
static int same_as_whole(const struct elf_sym *sym, void *arg)
{
	struct elf_syms *const *two = arg; /* names-only, whole */
	struct elf_sym n, w;

	if (elf_syms__find(two[0], sym->name, &n) || elf_syms__find(two[1], sym->name, &w) ||
	    n.vaddr != w.vaddr || n.size != w.size || n.file_off != w.file_off ||
	    elf_syms__at(two[0], sym->vaddr, &n) != -EINVAL)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_seg segs[8];
	struct probe_site site;
	struct usdt_notes *n;
	struct elf_syms *s;
	__u32 split;
	__u64 vaddr;

	if (size < 4)
		return 0;
	memcpy(&split, data, 4);
	data += 4;
	size -= 4;
	if (split > size)
		split = size;
	put(prog, data, split);
	put(dbg, data + split, size - split);
	s = elf_syms__open(prog, NULL);
	if (s) {
		size_t nseg = elf_syms__code_segments(s, segs, 8);
		struct elf_syms *names = elf_syms__open_names(prog, NULL);

		if (names) {
			struct elf_syms *two[2] = { names, s };

			elf_syms__for_each(names, same_as_whole, two);
			elf_syms__free(names);
		}
		elf_syms__for_each(s, each_sym, s);
		for (size_t i = 0; i < nseg && i < 8; i++)
			if (!elf_syms__off_to_vaddr(s, segs[i].off, &vaddr))
				elf_syms__at(s, vaddr, &(struct elf_sym){ 0 });
		elf_syms__build_id(s);
		elf_syms__free(s);
	}
	n = usdt_notes__open(prog);
	for (__u32 i = 0; n && i < usdt_notes__count(n); i++) {
		const struct usdt_note *note = usdt_notes__get(n, i);

		for (__u32 a = 0; a < note->nargs && a < USDT_MAX_ARGS; a++)
			usdt_arg__spec(&note->arg[a]);
	}
	usdt_notes__free(n);
	for (size_t at = 0; at < size; at += 64) {
		probe_site__choose(data + at, size - at < 64 ? size - at : 64, &site);
		probe_site__insn_len(data + at, size - at < 16 ? size - at : 16);
	}
	return 0;
}
