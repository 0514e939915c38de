// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind table of one ELF file (unwind_build.h): its .eh_frame (through .eh_frame_hdr when
 * the file has no section headers) and .debug_frame, and the .debug_frame of its local debug
 * file. libelf reads only the headers (elf_file.c checks
 * that every section is inside the file); the sections' bytes are read with pread into
 * memory of our own, so a file the traced process truncates meanwhile is a short read, not a
 * SIGBUS in a mapping.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include "eh_frame.h"
#include "elf_file.h"
#include "mono_clock.h"
#include "safe_open.h"
#include "unwind_build.h"
#include "unwind_rows.h"

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001 /* .eh_frame as some linkers type it */
#endif
#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2
#endif

/* The code segments, which every FDE's range must lie in. */
struct code_segs {
	__u64 start[8], end[8];
	size_t n;
};

static int in_code(__u64 pc, __u64 end, void *arg)
{
	const struct code_segs *cs = arg;
	size_t i;

	for (i = 0; i < cs->n; i++)
		if (pc >= cs->start[i] && end <= cs->end[i])
			return 1;
	return 0;
}

/*
 * The executable PT_LOAD segments into CS and OUT's segs (where mappings put the code);
 * -EFBIG when an address passes 4 GiB.
 */
static int code_segments(Elf *elf, struct code_segs *cs, struct unwind_table *out)
{
	GElf_Phdr ph;
	size_t nph, i;

	cs->n = 0;
	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || ph.p_vaddr + ph.p_memsz > 1ull << 32)
			return -EFBIG;
		if (!(ph.p_flags & PF_X) || cs->n == sizeof(cs->start) / sizeof(cs->start[0]))
			continue;
		cs->start[cs->n] = ph.p_vaddr;
		cs->end[cs->n++] = ph.p_vaddr + ph.p_memsz;
		out->segs[out->nsegs++] =
			(struct unwind_seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	return 0;
}

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *nm;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS || !sh->sh_size)
			continue;
		nm = elf_strptr(elf, shstrndx, sh->sh_name);
		if (nm && !strcmp(nm, name))
			return scn;
	}
	return NULL;
}

static int read_all(int fd, void *buf, size_t len, __u64 off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOEXEC; /* cut since its headers were read */
		done += (size_t)n;
	}
	return 0;
}

/* Inflate a SHF_COMPRESSED section's bytes RAW (LEN) into *OUT, *OUT_LEN. */
static int inflate_section(const __u8 *raw, size_t len, __u8 **out, size_t *out_len)
{
	Elf64_Chdr ch;
	uLongf zlen;
	size_t n;
	__u8 *buf;

	if (len < sizeof(ch))
		return -ENOEXEC;
	memcpy(&ch, raw, sizeof(ch));
	if (!ch.ch_size || ch.ch_size > UNWIND_MAX_SECTION)
		return -EFBIG; /* a zip bomb */
	buf = malloc(ch.ch_size);
	if (!buf)
		return -ENOMEM;
	if (ch.ch_type == ELFCOMPRESS_ZLIB) {
		zlen = (uLongf)ch.ch_size;
		if (uncompress(buf, &zlen, raw + sizeof(ch), (uLong)(len - sizeof(ch))) != Z_OK ||
		    zlen != ch.ch_size)
			goto bad;
	} else if (ch.ch_type == ELFCOMPRESS_ZSTD) {
		n = ZSTD_decompress(buf, ch.ch_size, raw + sizeof(ch), len - sizeof(ch));
		if (ZSTD_isError(n) || n != ch.ch_size)
			goto bad;
	} else {
		goto bad;
	}
	*out = buf;
	*out_len = ch.ch_size;
	return 0;
bad:
	free(buf);
	return -ENOEXEC;
}

/* The bytes of section NAME of ELF (file FD) into S (S->data malloc'd); 0 when absent. */
static int load_section(Elf *elf, int fd, const char *name, int debug_frame, struct eh_section *s)
{
	GElf_Shdr sh;
	__u8 *raw, *inflated;
	size_t len;
	int err;

	memset(s, 0, sizeof(*s));
	if (!section_named(elf, name, &sh))
		return 0;
	if (!debug_frame && sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND)
		return 0;
	if (sh.sh_size > UNWIND_MAX_SECTION)
		return -EFBIG; /* a sparse file's, or a file made to exhaust the recorder's memory */
	if (!(raw = malloc(sh.sh_size)))
		return -ENOMEM;
	err = read_all(fd, raw, sh.sh_size, sh.sh_offset);
	if (err) {
		free(raw);
		return err;
	}
	len = sh.sh_size;
	if (sh.sh_flags & SHF_COMPRESSED) {
		err = inflate_section(raw, len, &inflated, &len);
		free(raw);
		if (err)
			return err == -ENOMEM ? err : 0; /* a section not read: as if absent */
		raw = inflated;
	}
	s->data = raw;
	s->len = len;
	s->vaddr = debug_frame ? 0 : sh.sh_addr;
	s->debug_frame = debug_frame;
	return 1;
}

/* The PT_LOAD segment whose file bytes hold [START, END): 1 with *LOAD. */
static int segment_holding(Elf *elf, __u64 start, __u64 end, GElf_Phdr *load)
{
	size_t nph, i;

	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, load) && load->p_type == PT_LOAD &&
		    start >= load->p_vaddr && end >= start && end <= load->p_vaddr + load->p_filesz)
			return 1;
	return 0;
}

/*
 * The last FDE's address in .eh_frame_hdr (HDR, loaded at HDR_VADDR): the search table every
 * linker writes (datarel|sdata4 pairs from the header); 1 with *START (.eh_frame's address)
 * and *LAST, 0 when there is no table to trust.
 */
static int hdr_table(const __u8 *hdr, size_t len, __u64 hdr_vaddr, __u64 *start, __u64 *last)
{
	struct eh_section h = { .data = hdr, .len = len, .vaddr = hdr_vaddr, .datarel = hdr_vaddr };
	struct cfi_cursor c = { hdr + 4, hdr + len, 0 };
	__u64 count, i, loc, fde;

	if (len < 4 || hdr[0] != 1 || hdr[3] != (EH_PE_DATAREL | EH_PE_SDATA4) ||
	    eh_frame__pointer(&c, hdr[1], &h, start) || eh_frame__pointer(&c, hdr[2], &h, &count) ||
	    !count || count > cfi_left(&c) / 8)
		return 0;
	*last = 0;
	for (i = 0; i < count; i++) {
		if (eh_frame__pointer(&c, hdr[3], &h, &loc) ||
		    eh_frame__pointer(&c, hdr[3], &h, &fde))
			return 0;
		*last = fde > *last ? fde : *last;
	}
	return *last >= *start;
}

/*
 * .eh_frame in a file without section headers (sstrip'd, or cut off): found through
 * PT_GNU_EH_FRAME, .eh_frame_hdr's pointer to it, and ended after the last FDE its search
 * table names (the bytes after it are other sections'). 1 with S filled, 0 when the file has
 * no such header to trust, or a negative errno.
 */
static int load_by_hdr(Elf *elf, int fd, struct eh_section *s)
{
	GElf_Phdr ph, load;
	__u64 start, last, end;
	size_t nph, i;
	__u32 len;
	__u8 *hdr;
	int err, ok = 0;

	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (i = 0; i < nph && !ok; i++)
		ok = gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME;
	if (!ok || ph.p_filesz < 4 || ph.p_filesz > UNWIND_MAX_SECTION)
		return 0;
	hdr = malloc(ph.p_filesz);
	if (!hdr)
		return -ENOMEM;
	err = read_all(fd, hdr, ph.p_filesz, ph.p_offset);
	ok = !err && hdr_table(hdr, ph.p_filesz, ph.p_vaddr, &start, &last);
	free(hdr);
	if (err || !ok)
		return err;
	/* the last FDE's length: .eh_frame ends with it */
	if (!segment_holding(elf, last, last + 4, &load) ||
	    read_all(fd, &len, 4, load.p_offset + (last - load.p_vaddr)) || len == 0xffffffffu)
		return 0;
	end = last + 4 + len;
	if (end - start > UNWIND_MAX_SECTION || !segment_holding(elf, start, end, &load))
		return 0;
	s->data = malloc(end - start);
	if (!s->data)
		return -ENOMEM;
	err = read_all(fd, (void *)s->data, end - start, load.p_offset + (start - load.p_vaddr));
	if (err) {
		free((void *)s->data);
		s->data = NULL;
		return err;
	}
	s->len = end - start;
	s->vaddr = start;
	return 1;
}

/* .got's address: what DW_EH_PE_datarel is relative to in .eh_frame on x86-64. */
static __u64 got_address(Elf *elf)
{
	GElf_Shdr sh;

	return section_named(elf, ".got", &sh) ? sh.sh_addr : 0;
}

int unwind_table__build_fd(int fd, const char *path, const char *root, struct unwind_table *out)
{
	struct eh_section secs[3];
	struct code_segs cs;
	struct elf_dbg d = { .fd = -1 };
	size_t nsecs = 0, i;
	__u64 t0 = mono_now_ns();
	GElf_Ehdr eh;
	Elf *elf;
	int err, r;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_file__open(fd, 0, &err);
	if (!elf)
		return err;
	err = -ENOEXEC;
	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	err = code_segments(elf, &cs, out);
	if (err)
		goto out;
	elf_file__build_id(elf, out->build_id, sizeof(out->build_id));
	r = load_section(elf, fd, ".eh_frame", 0, &secs[nsecs]);
	if (!r && (r = load_by_hdr(elf, fd, &secs[nsecs])) > 0)
		out->sources |= UNWIND_SRC_EH_FRAME_HDR;
	if (r > 0) {
		secs[nsecs++].datarel = got_address(elf);
		out->sources |= UNWIND_SRC_EH_FRAME;
	}
	if (r >= 0 && (r = load_section(elf, fd, ".debug_frame", 1, &secs[nsecs])) > 0) {
		nsecs++;
		out->sources |= UNWIND_SRC_DEBUG_FRAME;
	}
	/* a stripped file's .debug_frame went to its debug file, with its .symtab */
	if (r >= 0 && !(out->sources & UNWIND_SRC_DEBUG_FRAME) &&
	    elf_file__debug(elf, out->build_id, path ? path : "", root ? root : "", &d) &&
	    (r = load_section(d.elf, d.fd, ".debug_frame", 1, &secs[nsecs])) > 0) {
		nsecs++;
		out->sources |= UNWIND_SRC_DEBUG_FILE;
	}
	err = r < 0 ? r : -ENODATA;
	if (r >= 0 && nsecs)
		err = unwind_table__rows(secs, nsecs, in_code, &cs, out);
	for (i = 0; !err && i < cs.n; i++)
		if (eh.e_entry >= cs.start[i] && eh.e_entry < cs.end[i])
			err = unwind_table__entry_end(out, eh.e_entry, cs.end[i]);
	for (i = 0; i < nsecs; i++)
		free((void *)secs[i].data);
out:
	if (d.elf)
		elf_end(d.elf);
	if (d.fd >= 0)
		close(d.fd);
	elf_end(elf);
	out->stats.build_ns = mono_now_ns() - t0;
	return err;
}

int unwind_table__build_id(int fd, char *out, size_t len)
{
	Elf *elf;
	int err;

	out[0] = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_file__open(fd, 0, &err);
	if (!elf)
		return err;
	elf_file__build_id(elf, out, len);
	elf_end(elf);
	return 0;
}

int unwind_table__build(const char *path, const char *root, struct unwind_table *out)
{
	int fd = safe_open__regular(path, NULL), err;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd == -EINVAL ? -ENOEXEC : fd;
	}
	err = unwind_table__build_fd(fd, path, root, out);
	close(fd);
	return err;
}
