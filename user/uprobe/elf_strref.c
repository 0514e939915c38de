// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Functions found by the name string their code loads (elf_strref.h). Two passes over the
 * file's own mapping (libelf's, no copies): .rodata for the names, then, only when some are
 * there, .text for the RIP-relative leas that load them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include "array.h"
#include "elf_file.h"
#include "elf_strref.h"

struct target {
	__u64 vaddr; /* of the string */
	size_t idx;  /* in names */
};

struct sect {
	const __u8 *p;
	__u64 vaddr, size;
};

/* The function starts of .eh_frame_hdr's sorted table, and the FDEs to check their ends. */
struct fdes {
	const __u8 *table; /* (s32 start, s32 fde) pairs, relative to the header's address */
	__u32 n;
	__u64 hdr_vaddr;
	struct sect eh; /* .eh_frame */
};

static __s32 le32(const __u8 *p)
{
	__s32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int target_cmp(const void *a, const void *b)
{
	const struct target *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int section(Elf *elf, const char *want, struct sect *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return -ENOENT;
		*out = (struct sect){ d->d_buf, sh.sh_addr, sh.sh_size };
		return 0;
	}
	return -ENOENT;
}

/*
 * .eh_frame_hdr as every x86-64 linker writes it: version 1, a 4-byte eh_frame pointer, a
 * udata4 count and a datarel sdata4 table. Anything else: no function starts (-ENOENT).
 */
static int fdes_open(Elf *elf, struct fdes *f)
{
	struct sect hdr;
	__u32 n;

	if (section(elf, ".eh_frame_hdr", &hdr) || section(elf, ".eh_frame", &f->eh) ||
	    f->eh.size < 16)
		return -ENOENT;
	if (hdr.size < 12 || hdr.p[0] != 1 || (hdr.p[1] & 0x0f) != 0x0b ||
	    (hdr.p[2] != 0x03 && hdr.p[2] != 0x0b) || hdr.p[3] != 0x3b)
		return -ENOENT;
	n = (__u32)le32(hdr.p + 8);
	if ((__u64)n * 8 > hdr.size - 12)
		return -ENOENT;
	f->table = hdr.p + 12;
	f->n = n;
	f->hdr_vaddr = hdr.vaddr;
	return 0;
}

/*
 * Start of the function whose FDE covers VADDR, or 0. The FDE's own pc_begin must read
 * (pcrel sdata4) as the table says, which also tells that pc_range is 4 bytes wide.
 */
static __u64 fdes_func(const struct fdes *f, __u64 vaddr)
{
	__u32 lo = 0, hi = f->n;
	__u64 start, fde, off;

	while (lo < hi) { /* first entry starting after VADDR */
		__u32 mid = lo + (hi - lo) / 2;

		if (f->hdr_vaddr + le32(f->table + 8 * (size_t)mid) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	start = f->hdr_vaddr + le32(f->table + 8 * (size_t)(lo - 1));
	fde = f->hdr_vaddr + le32(f->table + 8 * (size_t)(lo - 1) + 4);
	if (fde < f->eh.vaddr || fde - f->eh.vaddr > f->eh.size - 16)
		return 0;
	off = fde - f->eh.vaddr;
	if ((__u32)le32(f->eh.p + off) == 0xffffffffu || !le32(f->eh.p + off + 4))
		return 0; /* 64-bit length or a CIE: not what the table points at */
	if (fde + 8 + le32(f->eh.p + off + 8) != start)
		return 0;
	return vaddr - start < (__u32)le32(f->eh.p + off + 12) ? start : 0;
}

/* Every NUL-delimited occurrence in RO of a name with PREFIX: into *T (sorted). */
static int find_strings(const struct sect *ro, const char *prefix, const char *const *names,
			size_t n, struct target **t, size_t *nt)
{
	size_t plen = strlen(prefix), cap = 0;
	char pat[64];
	const __u8 *p = ro->p, *end = ro->p + ro->size;

	if (plen + 1 > sizeof(pat))
		return -EINVAL;
	pat[0] = '\0';
	memcpy(pat + 1, prefix, plen);
	while (p < end && (p = memmem(p, end - p, pat, plen + 1))) {
		const char *s = (const char *)p + 1;
		size_t len = strnlen(s, end - p - 1);

		p += 1 + plen;
		if ((const __u8 *)s + len >= end)
			break; /* not terminated inside the section */
		for (size_t i = 0; i < n; i++) {
			if (strncmp(names[i], prefix, plen) || strlen(names[i]) != len ||
			    memcmp(names[i], s, len))
				continue;
			if (array__grow((void **)t, *nt, &cap, sizeof(**t)))
				return -ENOMEM;
			(*t)[(*nt)++] =
				(struct target){ ro->vaddr + (__u64)((const __u8 *)s - ro->p), i };
			break;
		}
	}
	qsort(*t, *nt, sizeof(**t), target_cmp);
	return 0;
}

/*
 * Every `lea disp32(%rip), %r64` (REX.W [R] 8d, modrm mod 00 rm 101) in TEXT whose target is
 * one of T: the function around it becomes the name's, or marks the name ambiguous (~0).
 * Bytes are not decoded in order; a false match would have to hit a name's exact address.
 */
static void find_leas(const struct sect *text, const struct target *t, size_t nt,
		      const struct fdes *f, __u64 *vaddr)
{
	const __u8 *p = text->p + 1, *end = text->p + text->size;

	while (end - p >= 6 && (p = memchr(p, 0x8d, end - p - 5))) {
		__u64 site, target, fn;
		size_t lo = 0, hi = nt;

		if ((p[-1] & 0xfb) != 0x48 || (p[1] & 0xc7) != 0x05) {
			p++;
			continue;
		}
		site = text->vaddr + (__u64)(p - 1 - text->p);
		target = site + 7 + (__s64)le32(p + 2);
		p++; /* not past the 6 bytes: they may be another instruction's, not a lea */
		if (target < t[0].vaddr || target > t[nt - 1].vaddr)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t[mid].vaddr < target)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == nt || t[lo].vaddr != target)
			continue;
		fn = fdes_func(f, site);
		if (!fn)
			fn = ~0ull; /* no FDE covers it: cannot say where it starts */
		if (!vaddr[t[lo].idx])
			vaddr[t[lo].idx] = fn;
		else if (vaddr[t[lo].idx] != fn)
			vaddr[t[lo].idx] = ~0ull;
	}
}

int elf_strref__find(int fd, const char *prefix, const char *const *names, size_t n, size_t min,
		     __u64 *vaddr, struct elf_strref_stats *stats)
{
	struct elf_strref_stats st = { 0 };
	struct target *t = NULL;
	struct sect ro, text;
	struct fdes f;
	size_t nt = 0;
	int err, found = 0;
	Elf *elf;

	memset(vaddr, 0, n * sizeof(*vaddr));
	elf_version(EV_CURRENT);
	elf = elf_file__open(fd, 0, &err);
	if (!elf)
		return err;
	if (section(elf, ".rodata", &ro) || section(elf, ".text", &text) || fdes_open(elf, &f))
		goto out;
	st.rodata_bytes = ro.size;
	err = find_strings(&ro, prefix, names, n, &t, &nt);
	if (err || !nt)
		goto out;
	st.strings = nt;
	for (size_t i = 0; i < nt; i++)
		vaddr[t[i].idx] = 1; /* which names are there (cleared below) */
	for (size_t i = 0; i < n; i++) {
		st.names += vaddr[i] == 1;
		vaddr[i] = 0;
	}
	if (st.names < min)
		goto out;
	st.text_bytes = text.size;
	find_leas(&text, t, nt, &f, vaddr);
	for (size_t i = 0; i < n; i++) {
		if (vaddr[i] == ~0ull) {
			vaddr[i] = 0;
			st.ambiguous++;
		}
		found += !!vaddr[i];
	}
out:
	if (stats)
		*stats = st;
	free(t);
	elf_end(elf);
	return err ? err : found;
}
