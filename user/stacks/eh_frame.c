// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * .eh_frame and .debug_frame entries (eh_frame.h): the section walked entry by entry, each
 * CIE parsed once (looked up by its offset), each FDE reduced to its pc range and the bytes
 * of its instructions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "eh_frame.h"
#include "hmap.h"

#define FOUR_GIB (1ull << 32)

int eh_frame__pointer(struct cfi_cursor *c, __u8 enc, const struct eh_section *s, __u64 *out)
{
	__u64 base = 0, v;

	if (enc == EH_PE_OMIT || (enc & EH_PE_INDIRECT))
		return -EOPNOTSUPP;
	switch (enc & 0x70) {
	case EH_PE_ABSPTR:
		break;
	case EH_PE_PCREL: /* from the pointer's own address */
		base = s->vaddr + (__u64)(c->p - s->data);
		break;
	case EH_PE_DATAREL:
		if (!s->datarel)
			return -EOPNOTSUPP;
		base = s->datarel;
		break;
	default: /* textrel, funcrel, aligned: no x86-64 compiler emits them */
		return -EOPNOTSUPP;
	}
	switch (enc & 0x0f) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8:
		v = cfi_u64(c);
		break;
	case EH_PE_ULEB128:
		v = cfi_uleb(c);
		break;
	case EH_PE_SLEB128:
		v = (__u64)cfi_sleb(c);
		break;
	case EH_PE_UDATA2:
		v = cfi_u16(c);
		break;
	case EH_PE_SDATA2:
		v = (__u64)(__s64)(__s16)cfi_u16(c);
		break;
	case EH_PE_UDATA4:
		v = cfi_u32(c);
		break;
	case EH_PE_SDATA4:
		v = (__u64)(__s64)(__s32)cfi_u32(c);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (c->bad)
		return -EINVAL;
	*out = base + v;
	return 0;
}

/* The size of a pointer field of encoding ENC, skipped unread (a personality routine's). */
static int skip_pointer(struct cfi_cursor *c, __u8 enc)
{
	switch (enc & 0x0f) {
	case EH_PE_ABSPTR:
	case EH_PE_UDATA8:
	case EH_PE_SDATA8:
		cfi_skip(c, 8);
		break;
	case EH_PE_ULEB128:
		cfi_uleb(c);
		break;
	case EH_PE_SLEB128:
		cfi_sleb(c);
		break;
	case EH_PE_UDATA2:
	case EH_PE_SDATA2:
		cfi_skip(c, 2);
		break;
	case EH_PE_UDATA4:
	case EH_PE_SDATA4:
		cfi_skip(c, 4);
		break;
	default:
		return -EINVAL;
	}
	return c->bad ? -EINVAL : 0;
}

/* The augmentation string's letters after 'z' (GCC's, LLVM's; 'B' and 'G' are AArch64's). */
static int parse_augmentation(struct cfi_cursor *c, const char *aug, struct eh_cie *cie)
{
	struct cfi_cursor data;
	__u64 len;

	if (!aug[0])
		return 0;
	if (aug[0] != 'z')
		return -EOPNOTSUPP; /* "eh" and other pre-'z' forms: a layout not known */
	cie->augz = 1;
	len = cfi_uleb(c);
	if (c->bad || len > cfi_left(c))
		return -EINVAL;
	data.p = c->p;
	data.end = c->p + len;
	data.bad = 0;
	c->p += len;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			cie->fde_enc = cfi_u8(&data);
			break;
		case 'L':
			cfi_u8(&data); /* the LSDA's encoding: the LSDA is not read */
			break;
		case 'P':
			if (skip_pointer(&data, cfi_u8(&data)))
				return -EINVAL;
			break;
		case 'S':
			cie->signal = 1;
			break;
		case 'B':
		case 'G':
			break;
		default:
			return 0; /* a letter not known: the rest of its data is skipped by 'z' */
		}
	}
	return data.bad ? -EINVAL : 0;
}

/* The CIE of BODY (the bytes after its id), version and augmentation checked. */
static int parse_cie(struct cfi_cursor *c, const struct eh_section *s, struct eh_cie *cie)
{
	const char *aug;
	size_t n;
	__u8 version;
	int err;

	memset(cie, 0, sizeof(*cie));
	cie->fde_enc = EH_PE_ABSPTR;
	cie->addr_size = 8;
	version = cfi_u8(c);
	if (c->bad)
		return -EINVAL;
	if (version != 1 && version != 3 && !(s->debug_frame && version == 4))
		return -EOPNOTSUPP;
	aug = (const char *)c->p;
	n = strnlen(aug, cfi_left(c));
	if (n == cfi_left(c))
		return -EINVAL;
	c->p += n + 1;
	if (version == 4) {
		cie->addr_size = cfi_u8(c);
		if (cfi_u8(c) != 0 || cie->addr_size != 8) /* a segment selector; 32-bit code */
			return c->bad ? -EINVAL : -EOPNOTSUPP;
	}
	cie->code_align = cfi_uleb(c);
	cie->data_align = cfi_sleb(c);
	cie->ra_reg = version == 1 ? cfi_u8(c) : cfi_uleb(c);
	if (c->bad)
		return -EINVAL;
	if (s->debug_frame && aug[0])
		return -EOPNOTSUPP; /* .debug_frame has no augmentation data to skip */
	err = parse_augmentation(c, aug, cie);
	if (err)
		return err;
	if ((cie->fde_enc & 0x0f) == EH_PE_ULEB128 || (cie->fde_enc & 0x0f) == EH_PE_SLEB128 ||
	    !cie->code_align)
		return -EOPNOTSUPP; /* a pc range must have a fixed size; alignment 0 means nothing */
	cie->insns = c->p;
	cie->insns_end = c->end;
	return 0;
}

/* Remember the CIE at section offset OFF: its index + 1, or ~0u for a bad one. */
static int remember_cie(struct eh_frame *ef, __u64 off, __u32 idx)
{
	__u32 *v;

	if (!ef->by_off && !(ef->by_off = hmap__new(sizeof(__u32))))
		return -ENOMEM;
	v = hmap__get(ef->by_off, (struct hkey){ off, 0 }, 1);
	if (!v)
		return -ENOMEM;
	*v = idx;
	return 0;
}

static int find_cie(const struct eh_frame *ef, __u64 off, __u32 *idx)
{
	__u32 *v = ef->by_off ? hmap__get(ef->by_off, (struct hkey){ off, 0 }, 0) : NULL;

	if (!v)
		return 0;
	*idx = *v;
	return 1;
}

/* One entry's header: its length and where its body ends. */
struct entry {
	size_t start;  /* offset of its length field */
	size_t id_off; /* offset of its CIE id / CIE pointer */
	size_t end;    /* offset past its last byte (the section's end when cut) */
	int dwarf64, cut;
};

/* 1 with E read, 0 at the section's end (or .eh_frame's zero terminator), -EINVAL when bad. */
static int read_entry(const struct eh_section *s, size_t off, struct entry *e)
{
	struct cfi_cursor c;
	__u64 len;

	if (off >= s->len)
		return 0;
	c.p = s->data + off;
	c.end = s->data + s->len;
	c.bad = 0;
	len = cfi_u32(&c);
	if (c.bad)
		return -EINVAL;
	if (len == 0)
		return s->debug_frame ? -EINVAL : 0;
	e->dwarf64 = len == 0xffffffffu;
	if (e->dwarf64)
		len = cfi_u64(&c);
	if (c.bad || len < (e->dwarf64 ? 8u : 4u))
		return -EINVAL;
	e->start = off;
	e->id_off = (size_t)(c.p - s->data);
	e->cut = len > cfi_left(&c);
	e->end = e->cut ? s->len : e->id_off + (size_t)len;
	return 1;
}

/* The CIE at section offset OFF, parsed on first use: 1 with *IDX, 0 when it is refused. */
static int cie_at(const struct eh_section *s, __u64 off, struct eh_frame *ef, __u32 *idx)
{
	struct eh_cie cie;
	struct entry e;
	struct cfi_cursor c;
	__u64 id;
	int err;

	if (find_cie(ef, off, idx)) {
		if (*idx == ~0u)
			return 0;
		--*idx;
		return 1;
	}
	*idx = ~0u;
	if (off >= s->len || read_entry(s, (size_t)off, &e) != 1 || e.cut)
		goto bad;
	c.p = s->data + e.id_off;
	c.end = s->data + e.end;
	c.bad = 0;
	id = e.dwarf64 ? cfi_u64(&c) : cfi_u32(&c);
	if (!s->debug_frame ? id != 0 : id != (e.dwarf64 ? ~0ull : 0xffffffffull))
		goto bad; /* the pointer leads to an FDE, not a CIE */
	if (parse_cie(&c, s, &cie))
		goto bad;
	if (array__grow((void **)&ef->cies, ef->ncies, &ef->cies_cap, sizeof(cie)))
		return -ENOMEM;
	ef->cies[ef->ncies] = cie;
	*idx = (__u32)ef->ncies++;
bad:
	/* a bad CIE is remembered as ~0u, so its every FDE does not parse it again */
	err = remember_cie(ef, off, *idx == ~0u ? ~0u : *idx + 1);
	if (err)
		return err;
	return *idx != ~0u ? 1 : 0;
}

static int keep_below_4g(__u64 pc, __u64 end, void *arg)
{
	(void)pc;
	(void)arg;
	return end < FOUR_GIB; /* a row's pc holds 32 bits: the end's STOP_NONE row too */
}

/* The FDE of entry E; 1 kept, 0 left out, -ENOMEM. */
static int add_fde(const struct eh_section *s, const struct entry *e, __u8 src,
		   int (*keep)(__u64, __u64, void *), void *arg, struct eh_frame *ef)
{
	struct cfi_cursor c = { s->data + e->id_off, s->data + e->end, 0 };
	const struct eh_cie *cie;
	struct eh_fde f = { 0 };
	__u64 ptr, cie_off, range;
	__u32 idx;
	int r;

	ptr = e->dwarf64 ? cfi_u64(&c) : cfi_u32(&c);
	if (c.bad)
		return 0;
	if (s->debug_frame)
		cie_off = ptr; /* from the section's start */
	else if (ptr > e->id_off)
		return 0;
	else
		cie_off = e->id_off - ptr; /* back from the pointer's own place */
	r = cie_at(s, cie_off, ef, &idx);
	if (r <= 0)
		return r;
	cie = &ef->cies[idx];
	if (s->debug_frame) {
		f.pc = cfi_u64(&c);
		range = cfi_u64(&c);
	} else {
		if (eh_frame__pointer(&c, cie->fde_enc, s, &f.pc))
			return 0;
		/* the range is a size: the pointer's format without what it is relative to */
		if (eh_frame__pointer(&c, cie->fde_enc & 0x0f, s, &range))
			return 0;
	}
	if (c.bad || !range || f.pc + range < f.pc)
		return 0;
	f.end = f.pc + range;
	if (!(keep ? keep : keep_below_4g)(f.pc, f.end, arg) || f.end >= FOUR_GIB)
		return 0;
	if (cie->augz)
		cfi_skip(&c, cfi_uleb(&c));
	if (c.bad)
		return 0;
	f.insns = c.p;
	f.insns_end = c.end;
	f.cie = idx;
	f.cut = (__u8)e->cut;
	f.src = src;
	if (array__grow((void **)&ef->fdes, ef->nfdes, &ef->fdes_cap, sizeof(f)))
		return -ENOMEM;
	ef->fdes[ef->nfdes++] = f;
	return 1;
}

int eh_frame__walk(const struct eh_section *s, __u8 src,
		   int (*keep)(__u64 pc, __u64 end, void *arg), void *arg, struct eh_frame *ef)
{
	struct entry e;
	size_t off = 0;
	__u64 id;
	int r;

	/* CIE offsets are the section's own: forget the last section's */
	hmap__free(ef->by_off);
	ef->by_off = NULL;
	while ((r = read_entry(s, off, &e)) == 1) {
		struct cfi_cursor c = { s->data + e.id_off, s->data + e.end, 0 };

		id = e.dwarf64 ? cfi_u64(&c) : cfi_u32(&c);
		if (c.bad) {
			r = -EINVAL;
			break;
		}
		if (!s->debug_frame ? id == 0 : id == (e.dwarf64 ? ~0ull : 0xffffffffull)) {
			__u32 idx;

			r = cie_at(s, e.start, ef, &idx);
			if (r < 0)
				return r;
			if (!r)
				ef->refused++;
		} else {
			r = add_fde(s, &e, src, keep, arg, ef);
			if (r < 0)
				return r;
			if (!r)
				ef->refused++;
		}
		if (e.cut) {
			r = -EINVAL;
			break;
		}
		off = e.end;
	}
	if (r < 0)
		ef->cut++;
	return 0;
}

void eh_frame__free(struct eh_frame *ef)
{
	free(ef->cies);
	free(ef->fdes);
	hmap__free(ef->by_off);
	memset(ef, 0, sizeof(*ef));
}
