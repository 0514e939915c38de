// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* PLT stubs named by the function their GOT slot is for; see elf_plt.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "elf_plt.h"

#ifndef R_X86_64_GLOB_DAT
#define R_X86_64_GLOB_DAT 6
#endif
#ifndef R_X86_64_JUMP_SLOT
#define R_X86_64_JUMP_SLOT 7
#endif

struct slot {
	__u64 got;
	const char *name; /* in libelf's data: copied before elf_end */
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static int slot_cmp(const void *a, const void *b)
{
	__u64 x = ((const struct slot *)a)->got, y = ((const struct slot *)b)->got;

	return (x > y) - (x < y);
}

/* The function names of RELA's JUMP_SLOT and GLOB_DAT relocations, by GOT slot. */
static int read_relocs(Elf *elf, Elf_Scn *rela, const GElf_Shdr *sh, struct slots *s)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	Elf_Data *d = elf_getdata(rela, NULL), *syms;
	GElf_Shdr symsh;
	GElf_Rela r;
	GElf_Sym sym;
	const char *name;
	size_t i, n;

	if (!d || !symscn || !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)))
		return 0;
	n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getrela(d, (int)i, &r))
			break;
		if (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT &&
		    GELF_R_TYPE(r.r_info) != R_X86_64_GLOB_DAT)
			continue;
		if (!GELF_R_SYM(r.r_info) || !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		name = elf_strptr(elf, symsh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
			return -ENOMEM;
		s->v[s->n++] = (struct slot){ r.r_offset, name };
	}
	return 0;
}

static const char *slot_name(const struct slots *s, __u64 got)
{
	struct slot key = { .got = got }, *hit;

	hit = s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), slot_cmp) : NULL;
	return hit ? hit->name : NULL;
}

static int add_stub(struct elf_plt *p, size_t *cap, __u64 vaddr, __u32 size, const char *name)
{
	struct elf_plt_stub *st;

	if (p->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;

		st = realloc(p->stubs, nc * sizeof(*st));
		if (!st)
			return -ENOMEM;
		p->stubs = st;
		*cap = nc;
	}
	st = &p->stubs[p->n];
	st->vaddr = vaddr;
	st->size = size;
	if (asprintf(&st->name, "%s@plt", name) < 0)
		return -ENOMEM;
	p->n++;
	return 0;
}

/* Each entry of a stub section: its `jmp *disp32(%rip)` (ff 25), whatever prefixes it has. */
static int read_stubs(Elf_Scn *scn, const GElf_Shdr *sh, const struct slots *s, struct elf_plt *p,
		      size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	__u64 ent = sh->sh_entsize >= 8 && sh->sh_entsize <= 32 ? sh->sh_entsize : 16, k;
	const __u8 *b;
	const char *name;
	__s32 disp;
	__u64 j;

	if (!d || !d->d_buf || d->d_size < sh->sh_size)
		return 0;
	b = d->d_buf;
	for (k = 0; k + ent <= sh->sh_size; k += ent) {
		for (j = 0; j + 6 <= ent; j++) {
			if (b[k + j] != 0xff || b[k + j + 1] != 0x25)
				continue;
			memcpy(&disp, b + k + j + 2, sizeof(disp));
			name = slot_name(s, sh->sh_addr + k + j + 6 + (__s64)disp);
			/*
			 * .plt's first entry (`push GOT+8; jmp *GOT+16`): lazy binding's way into
			 * ld.so's resolver, run by each function's first call through the PLT; its
			 * slot has no relocation, ld.so fills it.
			 */
			if (!name && !k && j == 6 && b[0] == 0xff && b[1] == 0x35)
				name = "_dl_runtime_resolve";
			if (name && add_stub(p, cap, sh->sh_addr + k, (__u32)ent, name))
				return -ENOMEM;
			break;
		}
	}
	return 0;
}

static int stub_cmp(const void *a, const void *b)
{
	__u64 x = ((const struct elf_plt_stub *)a)->vaddr,
	      y = ((const struct elf_plt_stub *)b)->vaddr;

	return (x > y) - (x < y);
}

static int is_plt(const char *name)
{
	return name &&
	       (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got"));
}

int elf_plt__read(Elf *elf, struct elf_plt *p)
{
	struct slots s = {};
	Elf_Scn *scn = NULL;
	size_t shstr, cap = 0;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	int err = 0;

	memset(p, 0, sizeof(*p));
	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstr))
		return 0;
	while (!err && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			err = read_relocs(elf, scn, &sh, &s);
	if (!err && s.n)
		qsort(s.v, s.n, sizeof(*s.v), slot_cmp);
	for (scn = NULL; !err && (scn = elf_nextscn(elf, scn));) {
		if (!gelf_getshdr(scn, &sh) || !is_plt(elf_strptr(elf, shstr, sh.sh_name)))
			continue;
		if (p->nsecs < 4) {
			p->secs[p->nsecs].lo = sh.sh_addr;
			p->secs[p->nsecs].hi = sh.sh_addr + sh.sh_size;
			p->nsecs++;
		}
		err = read_stubs(scn, &sh, &s, p, &cap);
	}
	free(s.v);
	if (err) {
		elf_plt__free(p);
		return err;
	}
	if (p->n)
		qsort(p->stubs, p->n, sizeof(*p->stubs), stub_cmp);
	return 0;
}

const struct elf_plt_stub *elf_plt__at(const struct elf_plt *p, __u64 vaddr)
{
	size_t lo = 0, hi = p->n;

	/* The last stub starting at or below VADDR. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->stubs[mid].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr - p->stubs[lo - 1].vaddr >= p->stubs[lo - 1].size)
		return NULL;
	return &p->stubs[lo - 1];
}

__u64 elf_plt__boundary(const struct elf_plt *p, __u64 start, __u64 vaddr)
{
	__u64 best = 0;

	for (int i = 0; i < p->nsecs; i++)
		if (p->secs[i].lo > start && p->secs[i].lo <= vaddr &&
		    (!best || p->secs[i].lo < best))
			best = p->secs[i].lo;
	return best;
}

void elf_plt__free(struct elf_plt *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->stubs[i].name);
	free(p->stubs);
	memset(p, 0, sizeof(*p));
}
