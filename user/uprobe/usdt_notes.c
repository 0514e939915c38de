// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * .note.stapsdt reader (see usdt_notes.h). The note format is systemtap's (sys/sdt.h):
 * owner "stapsdt", type 3, descriptor = pc, base, semaphore (address-sized), then provider,
 * name and argument string, each NUL-terminated.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "safe_open.h"
#include "usdt_notes.h"
#include "usdt_arg.h"

#define NT_STAPSDT 3

struct usdt_notes {
	struct usdt_note *v;
	__u32 n, cap;
	char **strs_v; /* each note's strings, one allocation per note */
};

/* Register names sys/sdt.h may print, by struct pt_regs slot (x86-64 uapi order). */
static const struct {
	const char *name[4]; /* 64, 32, 16, 8-bit names */
	__u8 slot;
} regs[] = {
	{ { "rax", "eax", "ax", "al" }, 10 },	  { { "rbx", "ebx", "bx", "bl" }, 5 },
	{ { "rcx", "ecx", "cx", "cl" }, 11 },	  { { "rdx", "edx", "dx", "dl" }, 12 },
	{ { "rsi", "esi", "si", "sil" }, 13 },	  { { "rdi", "edi", "di", "dil" }, 14 },
	{ { "rbp", "ebp", "bp", "bpl" }, 4 },	  { { "rsp", "esp", "sp", "spl" }, 19 },
	{ { "r8", "r8d", "r8w", "r8b" }, 9 },	  { { "r9", "r9d", "r9w", "r9b" }, 8 },
	{ { "r10", "r10d", "r10w", "r10b" }, 7 }, { { "r11", "r11d", "r11w", "r11b" }, 6 },
	{ { "r12", "r12d", "r12w", "r12b" }, 3 }, { { "r13", "r13d", "r13w", "r13b" }, 2 },
	{ { "r14", "r14d", "r14w", "r14b" }, 1 }, { { "r15", "r15d", "r15w", "r15b" }, 0 },
};

/* "%reg" at *P (advanced past it): its pt_regs slot, or -1. */
static int parse_reg(const char **p)
{
	const char *s = *p;
	size_t len = 0;

	if (*s != '%')
		return -1;
	s++;
	while ((s[len] >= 'a' && s[len] <= 'z') || (s[len] >= '0' && s[len] <= '9'))
		len++;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int w = 0; w < 4; w++)
			if (strlen(regs[i].name[w]) == len && !strncmp(regs[i].name[w], s, len)) {
				*p = s + len;
				return regs[i].slot;
			}
	return -1; /* %rip (relative to the next instruction, not the probe), %ah, ... */
}

/* A decimal or 0x number at *P with an optional sign; 0 or -1. */
static int parse_num(const char **p, __s64 *v)
{
	char *end;

	errno = 0;
	*v = strtoll(*p, &end, 0);
	if (end == *p || errno)
		return -1;
	*p = end;
	return 0;
}

int usdt_arg__parse(const char *spec, struct usdt_arg *out)
{
	const char *p = spec;
	__s64 size, v = 0;
	int reg;

	memset(out, 0, sizeof(*out));
	if (parse_num(&p, &size) || *p != '@')
		return -EINVAL;
	p++;
	out->is_signed = size < 0;
	size = size < 0 ? -size : size;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -EINVAL;
	out->size = size;
	if (*p == '$') {
		p++;
		if (parse_num(&p, &out->val) || *p)
			return -ENOTSUP; /* $symbol */
		out->kind = USDT_ARG_CONST;
		return 0;
	}
	if (*p == '%') {
		reg = parse_reg(&p);
		if (reg < 0 || *p)
			return -ENOTSUP;
		out->kind = USDT_ARG_REG;
		out->reg = reg;
		return 0;
	}
	/* disp(%reg): the displacement may be absent; symbols and index forms are not read. */
	if (*p != '(' && parse_num(&p, &v))
		return -ENOTSUP;
	if (*p++ != '(')
		return -ENOTSUP;
	reg = parse_reg(&p);
	if (reg < 0 || *p++ != ')' || *p)
		return -ENOTSUP;
	out->kind = USDT_ARG_MEM;
	out->reg = reg;
	out->val = v;
	return 0;
}

int usdt_args__parse(const char *specs, struct usdt_arg *arg, __u32 max)
{
	char buf[128];
	const char *p = specs;
	__u32 n = 0;
	int err;

	while (*p) {
		size_t len;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		len = strcspn(p, " ");
		if (n == max || len >= sizeof(buf))
			return -E2BIG;
		memcpy(buf, p, len);
		buf[len] = 0;
		err = usdt_arg__parse(buf, &arg[n]);
		if (err)
			return err;
		n++;
		p += len;
	}
	return n;
}

/* The file offset of VADDR in a file-backed part of a PT_LOAD segment; 0 or -ENOENT. */
static int vaddr_to_off(Elf *elf, size_t nphdr, __u64 vaddr, __u64 *off)
{
	GElf_Phdr ph;

	for (size_t i = 0; i < nphdr; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int add_note(struct usdt_notes *n, const struct usdt_note *note, char *strs)
{
	if (n->n == n->cap) {
		__u32 cap = n->cap ? n->cap * 2 : 16;
		struct usdt_note *v = realloc(n->v, cap * sizeof(*v));
		char **s;

		if (!v)
			return -ENOMEM;
		n->v = v;
		s = realloc(n->strs_v, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		n->strs_v = s;
		n->cap = cap;
	}
	n->strs_v[n->n] = strs;
	n->v[n->n++] = *note;
	return 0;
}

/* One note's descriptor: addresses, then three strings. */
static int read_note(struct usdt_notes *n, Elf *elf, size_t nphdr, int is64, __u64 base_addr,
		     int has_base, const char *desc, size_t len)
{
	size_t asz = is64 ? 8 : 4, slen;
	struct usdt_note note = {};
	__u64 a[3] = {};
	const char *s, *end = desc + len;
	char *copy;
	int err;

	if (len < 3 * asz + 3)
		return 0;
	for (int i = 0; i < 3; i++) {
		if (is64) {
			memcpy(&a[i], desc + i * 8, 8);
		} else {
			__u32 w;

			memcpy(&w, desc + i * 4, 4);
			a[i] = w;
		}
	}
	s = desc + 3 * asz;
	slen = end - s;
	/* provider\0name\0args\0: all three must be terminated inside the note. */
	if (!memchr(s, 0, slen))
		return 0;
	copy = malloc(slen + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, slen);
	copy[slen] = 0;
	note.provider = copy;
	note.name = note.provider + strlen(note.provider) + 1;
	if (note.name >= copy + slen) {
		free(copy);
		return 0;
	}
	note.args = note.name + strlen(note.name) + 1;
	if (note.args > copy + slen)
		note.args = copy + slen; /* no argument string: "" */
	note.pc = a[0];
	note.sema = a[2];
	if (has_base && a[1]) {
		/* Prelink moved the sections: shift by what .stapsdt.base moved. */
		note.pc += base_addr - a[1];
		if (note.sema)
			note.sema += base_addr - a[1];
	}
	if (vaddr_to_off(elf, nphdr, note.pc, &note.pc_off) ||
	    (note.sema && vaddr_to_off(elf, nphdr, note.sema, &note.sema_off))) {
		free(copy);
		return 0;
	}
	err = usdt_args__parse(note.args, note.arg, USDT_MAX_ARGS);
	if (err < 0)
		note.args_err = err;
	else
		note.nargs = err;
	err = add_note(n, &note, copy);
	if (err)
		free(copy);
	return err;
}

static int read_notes(struct usdt_notes *n, Elf *elf)
{
	size_t shstrndx, nphdr;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	__u64 base_addr = 0;
	int has_base = 0, is64 = gelf_getclass(elf) == ELFCLASS64, err;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) ||
	    elf_getphdrnum(elf, &nphdr))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			has_base = 1;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return -ENOEXEC;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *owner = (const char *)d->d_buf + noff;

			if (nh.n_type != NT_STAPSDT || nh.n_namesz != sizeof("stapsdt") ||
			    memcmp(owner, "stapsdt", sizeof("stapsdt")))
				continue;
			err = read_note(n, elf, nphdr, is64, base_addr, has_base,
					(const char *)d->d_buf + doff, nh.n_descsz);
			if (err)
				return err;
		}
	}
	return 0;
}

struct usdt_notes *usdt_notes__open(const char *path)
{
	struct usdt_notes *n;
	Elf *elf = NULL;
	int fd, err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOEXEC;
		return NULL;
	}
	fd = safe_open__regular(path, NULL);
	if (fd < 0) {
		errno = fd == -EINVAL ? ENOEXEC : -fd; /* not a regular file: no ELF file */
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		err = -ENOMEM;
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? read_notes(n, elf) : -ENOEXEC;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		usdt_notes__free(n);
		errno = -err;
		return NULL;
	}
	return n;
}

void usdt_notes__free(struct usdt_notes *n)
{
	if (!n)
		return;
	for (__u32 i = 0; i < n->n; i++)
		free(n->strs_v[i]);
	free(n->strs_v);
	free(n->v);
	free(n);
}

__u32 usdt_notes__count(const struct usdt_notes *n)
{
	return n ? n->n : 0;
}

const struct usdt_note *usdt_notes__get(const struct usdt_notes *n, __u32 i)
{
	return n && i < n->n ? &n->v[i] : NULL;
}

int usdt_notes__has_provider(const struct usdt_notes *n, const char *provider)
{
	for (__u32 i = 0; n && i < n->n; i++)
		if (!strcmp(n->v[i].provider, provider))
			return 1;
	return 0;
}

__u32 usdt_arg__spec(const struct usdt_arg *a)
{
	int log2 = a->size == 8 ? 3 : a->size == 4 ? 2 : a->size == 2 ? 1 : 0;

	if ((a->kind == USDT_ARG_MEM || a->kind == USDT_ARG_CONST) &&
	    (a->val < BS_USDT_ARG_VAL_MIN || a->val > BS_USDT_ARG_VAL_MAX))
		return 0;
	switch (a->kind) {
	case USDT_ARG_REG:
		return BS_USDT_ARG(BS_USDT_ARG_REG, a->reg, log2, a->is_signed, 0);
	case USDT_ARG_MEM:
		return BS_USDT_ARG(BS_USDT_ARG_MEM, a->reg, log2, a->is_signed, a->val);
	case USDT_ARG_CONST:
		return BS_USDT_ARG(BS_USDT_ARG_CONST, 0, log2, a->is_signed, a->val);
	}
	return 0;
}
