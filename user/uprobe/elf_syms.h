/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The function symbols of one ELF file, for probe discovery and symbolization: .dynsym, then
 * .symtab, or when the file has no .symtab a separate debug file found by build-id
 * (ROOT/usr/lib/debug/.build-id/xx/yyy.debug) or by .gnu_debuglink (ROOT/usr/lib/debug/DIR/,
 * DIR/.debug/, DIR/; matched by build-id, else by the link's CRC); and the variables .dynsym
 * exports, looked up apart (elf_syms__find_data). Symbols come from the debug file, code
 * bytes and segments from the file itself. Opened once per file (dev, inode) and kept:
 * lookups are by exact name (a versioned "foo@@VER" matches "foo") and by address. A name
 * defined more than once (a default and a compat version, statics in different files) is
 * one entry per address; find() prefers global over local and the default version ("@@")
 * over compat ones, which is what callers bind to. STT_GNU_IFUNC symbols are their
 * resolvers. The open handle keeps one fd (for elf_syms__read) and copies of the names;
 * libelf's mapping of the file is gone once open returns.
 */
#ifndef BPFSIGHT_ELF_SYMS_H
#define BPFSIGHT_ELF_SYMS_H

#include <linux/types.h>
#include <stddef.h>

struct elf_syms;

struct elf_sym {
	const char *name; /* as in the table (unversioned); valid until elf_syms__free */
	__u64 vaddr;	  /* st_value: ELF virtual address */
	__u64 size;
	__u64 file_off;	    /* where the function's first byte is in the file (uprobe offset) */
	const char *source; /* "dynsym", "symtab" or "debug" */
};

/*
 * Read PATH's symbols (PATH may be a /proc/PID/map_files/... or /proc/PID/root/... path).
 * ROOT prefixes the debug-file directory ("/proc/PID/root" for a container; NULL = "").
 * Returns NULL with errno set: ENOEXEC for anything but a complete ELF executable or shared
 * object (text, directories, relocatable objects, truncated files), else open()'s errno.
 */
struct elf_syms *elf_syms__open(const char *path, const char *root);
/*
 * As elf_syms__open, for lookups by name only (find, find_data, for_each, read, segments):
 * the PLT's stubs are not read, and elf_syms__at on it fails (-EINVAL) rather than name
 * an address otherwise. The uprobe manager looks at every file a process maps this way:
 * reading the stubs (every relocation of the file) was a quarter of each open.
 */
struct elf_syms *elf_syms__open_names(const char *path, const char *root);
void elf_syms__free(struct elf_syms *s);

/* Find the function NAME (defined, STT_FUNC or STT_GNU_IFUNC, size may be 0). 0 or -ENOENT. */
int elf_syms__find(const struct elf_syms *s, const char *name, struct elf_sym *out);
/*
 * Find the variable NAME the file exports (.dynsym, STT_OBJECT: a python's _PyRuntime): 0 or
 * -ENOENT. OUT->file_off is 0 when it lies past the file-backed part (.bss).
 */
int elf_syms__find_data(const struct elf_syms *s, const char *name, struct elf_sym *out);
/*
 * Call CB for every defined function symbol, by address; stops when CB returns non-zero
 * (returned).
 */
int elf_syms__for_each(const struct elf_syms *s, int (*cb)(const struct elf_sym *sym, void *arg),
		       void *arg);
/*
 * The function containing VADDR (an ELF address); 0 or -ENOENT (-EINVAL: S was opened by
 * elf_syms__open_names). OUT->vaddr is its start; a
 * symbol of size 0 extends to the next symbol or PLT section (OUT->size says how far). A PLT
 * stub is named after the function it jumps to, "malloc@plt" (source "plt"). Of aliases, the
 * global, default-version, shortest name wins (ncclAllReduce over pncclAllReduce).
 */
int elf_syms__at(const struct elf_syms *s, __u64 vaddr, struct elf_sym *out);
/*
 * Copy LEN bytes of the file's loaded image at VADDR (code for probe-site analysis): 0, or
 * -ENOENT when VADDR is in no PT_LOAD segment. Bytes past the segment's file-backed part
 * (or past its end) read as zeros.
 */
int elf_syms__read(const struct elf_syms *s, __u64 vaddr, void *buf, size_t len);
/* ELF vaddr of file offset OFF in a PT_LOAD segment (for address -> symbol); 0 or -ENOENT. */
int elf_syms__off_to_vaddr(const struct elf_syms *s, __u64 off, __u64 *vaddr);
/* Where a PT_LOAD segment's bytes are in the file and in the ELF address space. */
struct elf_seg {
	__u64 vaddr, off, filesz;
};

/*
 * The executable PT_LOAD segments, in file order: up to MAX into OUT; returns how many there
 * are (a mapping of code in /proc/PID/maps is one of them: its load bias follows).
 */
size_t elf_syms__code_segments(const struct elf_syms *s, struct elf_seg *out, size_t max);
/* Lower-case hex build-id, or "" when the file has none. */
const char *elf_syms__build_id(const struct elf_syms *s);
/* 1 when symbols came from .symtab or a debug file too (not only .dynsym). */
int elf_syms__has_symtab(const struct elf_syms *s);

/*
 * Demangle an Itanium C++ name into BUF (e.g. "_Z6kernelPfi" -> "kernel(float*, int)").
 * Names that are not mangled are copied as they are. Always NUL-terminates; truncates (at
 * 4095 bytes at most). The work is bounded: a name over 1 KiB, or one whose demangled form
 * passes 64 KiB (nested substitutions double it per level), is copied as it is and counted
 * (demangle__over_budget). Thread-safe; results are cached.
 */
void demangle(const char *name, char *buf, size_t len);
/* How many names were kept mangled because they were over the budget. */
unsigned long long demangle__over_budget(void);

#endif /* BPFSIGHT_ELF_SYMS_H */
