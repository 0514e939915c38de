/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An ELF file as elf_syms.c reads it: a libelf handle only on a file that is all there
 * (libelf maps the file and trusts its offsets), its build-id, its symbol tables, and the
 * separate debug file that holds a stripped file's .symtab.
 */
#ifndef BPFSIGHT_ELF_FILE_H
#define BPFSIGHT_ELF_FILE_H

#include <gelf.h>
#include <linux/types.h>
#include <stddef.h>

#define ELF_BUILD_ID_LEN 129 /* hex of the longest build-id kept, and its NUL */

enum elf_src { ELF_SRC_DYNSYM, ELF_SRC_SYMTAB, ELF_SRC_DEBUG };

/* One symbol table being read: .dynsym, .symtab, or a debug file's .symtab. */
struct elf_table {
	Elf_Data *syms, *strs, *versym;
	size_t n;
	enum elf_src src;
};

/* A debug file opened for its .symtab (closed once its symbols are copied). */
struct elf_dbg {
	int fd;
	Elf *elf;
};

/*
 * libelf handle of FD, checked to be an executable or shared object that is all there (a
 * DEBUG file's segments describe the stripped-off code, so only its sections are checked);
 * NULL with *ERR set (-ENOEXEC, or fstat's errno).
 */
Elf *elf_file__open(int fd, int debug, int *err);
/* Lower-case hex of the NT_GNU_BUILD_ID note into OUT; "" when there is none. */
void elf_file__build_id(Elf *elf, char *out, size_t outlen);
/*
 * The symbol table of TYPE (SHT_DYNSYM or SHT_SYMTAB) with its strings (and, for .dynsym,
 * versions) into T, read as SRC: 1, or 0 when the file has none.
 */
int elf_file__table(Elf *elf, Elf64_Word type, enum elf_src src, struct elf_table *t);
/*
 * The separate debug file of ELF (opened at PATH, whose build-id is BUILD_ID, "" when none)
 * under ROOT: by build-id (ROOT/usr/lib/debug/.build-id/xx/yyy.debug), then by
 * .gnu_debuglink (ROOT/usr/lib/debug/DIR/, DIR/.debug/, DIR/; matched by build-id, else by
 * the link's CRC). 1 with D open (the caller closes it), else 0.
 */
int elf_file__debug(Elf *elf, const char *build_id, const char *path, const char *root,
		    struct elf_dbg *d);

#endif /* BPFSIGHT_ELF_FILE_H */
