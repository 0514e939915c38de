// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An ELF file as elf_syms reads it (elf_file.h): opened only when all of it is there, its
 * build-id, its symbol tables, and the separate debug file of a stripped one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "elf_file.h"
#include "msg.h"
#include "safe_open.h"

/*
 * Is every header, section and segment inside the file? libelf maps the file and trusts
 * offsets; a truncated file is rejected here instead of being read past its end.
 */
static int check_bounds(Elf *elf, __u64 size, int segments)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	size_t nph, nsh, i;

	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	/*
	 * The header's own counts: elf_getphdrnum()/elf_getshdrnum() quietly shrink them to what
	 * the file holds, which would turn a truncated file into one without symbols.
	 */
	if (elf_getphdrnum(elf, &nph) || elf_getshdrnum(elf, &nsh))
		return -ENOEXEC;
	if (eh.e_phnum != PN_XNUM)
		nph = eh.e_phnum;
	if (eh.e_shnum)
		nsh = eh.e_shnum;
	if (eh.e_shoff && !nsh)
		return -ENOEXEC; /* extended numbering whose section 0 was cut off */
	if (eh.e_phoff > size || (__u64)nph * eh.e_phentsize > size - eh.e_phoff)
		return -ENOEXEC;
	if (nsh && (eh.e_shoff > size || (__u64)nsh * eh.e_shentsize > size - eh.e_shoff))
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &i) || i != nph || elf_getshdrnum(elf, &i) || i != nsh)
		return -ENOEXEC;
	for (i = 0; segments && i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return -ENOEXEC;
	}
	return 0;
}

Elf *elf_file__open(int fd, int debug, int *err)
{
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;

	*err = -ENOEXEC;
	if (fstat(fd, &st)) {
		*err = -errno;
		return NULL;
	}
	if (!S_ISREG(st.st_mode))
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return NULL;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    check_bounds(elf, st.st_size, !debug)) {
		elf_end(elf);
		return NULL;
	}
	*err = 0;
	return elf;
}

/* Hex of the NT_GNU_BUILD_ID note in D, if there is one. */
static int note_build_id(Elf_Data *d, char *out, size_t outlen)
{
	size_t off = 0, noff, doff, i;
	GElf_Nhdr nh;

	while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((char *)d->d_buf + noff, "GNU", 4))
			continue;
		for (i = 0; i < nh.n_descsz && 2 * i + 2 < outlen; i++)
			snprintf(out + 2 * i, 3, "%02x", ((__u8 *)d->d_buf)[doff + i]);
		return 1;
	}
	return 0;
}

/* From the note sections, else from PT_NOTE segments. */
void elf_file__build_id(Elf *elf, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph;
	size_t nph, i;

	out[0] = 0;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    note_build_id(elf_getdata(scn, NULL), out, outlen))
			return;
	if (elf_getphdrnum(elf, &nph))
		return;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
		    note_build_id(elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
						       ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR),
				  out, outlen))
			return;
}

static const char *section_name(Elf *elf, GElf_Shdr *sh)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

int elf_file__table(Elf *elf, Elf64_Word type, enum elf_src src, struct elf_table *t)
{
	Elf_Scn *scn = NULL, *vscn = NULL;
	GElf_Shdr sh;

	memset(t, 0, sizeof(*t));
	t->src = src;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_GNU_versym)
			vscn = scn;
		if (sh.sh_type != type || t->syms)
			continue;
		if (!sh.sh_entsize || !(t->syms = elf_getdata(scn, NULL)))
			continue;
		t->strs = elf_getdata(elf_getscn(elf, sh.sh_link), NULL);
		t->n = sh.sh_size / sh.sh_entsize;
		if (!t->strs)
			t->syms = NULL, t->n = 0;
	}
	if (type == SHT_DYNSYM && t->syms && vscn) {
		t->versym = elf_getdata(vscn, NULL);
		if (t->versym && t->versym->d_size / 2 < t->n)
			t->versym = NULL;
	}
	return t->syms ? 1 : 0;
}

/* The largest debug file whose CRC is read (one without a build-id). */
#define DEBUG_CRC_MAX (1 << 30)

/*
 * Open PATH as the debug file of a file with BUILD_ID: an ELF with a .symtab whose build-id
 * matches.
 */
static int dbg_try(const char *build_id, const char *path, __u32 crc, int check_crc,
		   struct elf_dbg *d)
{
	char bid[ELF_BUILD_ID_LEN];
	const char *why = NULL;
	struct elf_table t;
	int err;

	/* The traced process may have put a FIFO or a link to a device here: never opened. */
	d->fd = safe_open__regular(path, &why);
	if (d->fd < 0) {
		if (why)
			pr_warn("%s: skipped as a debug file: %s, not a regular file\n", path, why);
		d->fd = -1;
		return 0;
	}
	d->elf = elf_file__open(d->fd, 1, &err);
	if (!d->elf || !elf_file__table(d->elf, SHT_SYMTAB, ELF_SRC_DEBUG, &t))
		goto fail;
	elf_file__build_id(d->elf, bid, sizeof(bid));
	if (build_id[0] && strcmp(bid, build_id))
		goto fail;
	if (!build_id[0] && check_crc) {
		/* No build-id to compare: the .gnu_debuglink CRC of the whole file decides. */
		unsigned char buf[65536];
		uLong c = crc32(0L, Z_NULL, 0);
		struct stat st;
		ssize_t n;
		off_t off = 0;

		/* A sparse file of a terabyte reads as fast as zeros come: minutes of CRC. */
		if (fstat(d->fd, &st) || st.st_size > DEBUG_CRC_MAX) {
			pr_warn("%s: skipped as a debug file: over %d GiB with no build-id to "
				"compare (its CRC is not read)\n",
				path, DEBUG_CRC_MAX >> 30);
			goto fail;
		}
		while ((n = pread(d->fd, buf, sizeof(buf), off)) > 0) {
			c = crc32(c, buf, (uInt)n);
			off += n;
		}
		if (n < 0 || (__u32)c != crc)
			goto fail;
	}
	return 1;
fail:
	if (d->elf)
		elf_end(d->elf);
	close(d->fd);
	d->elf = NULL;
	d->fd = -1;
	return 0;
}

/*
 * PATH as the traced process sees it (for .gnu_debuglink's directory), without ROOT. A file
 * opened through a link (/proc/PID/map_files/..., or /proc/self/fd/N when the discovery
 * passes an open file) is named by where the link leads.
 */
static void inner_path(const char *path, const char *root, char *out, size_t outlen)
{
	char link[PATH_MAX];
	size_t rl = strlen(root);
	ssize_t n;

	out[0] = 0;
	if (!strncmp(path, "/proc/", 6) && (strstr(path, "/map_files/") || strstr(path, "/fd/"))) {
		n = readlink(path, link, sizeof(link) - 1);
		link[n > 0 ? n : 0] = 0;
		if (!strstr(path, "/fd/")) {
			snprintf(out, outlen, "%s", link); /* already the process's own view */
			return;
		}
		path = link;
	}
	if (rl && !strncmp(path, root, rl) && path[rl] == '/')
		path += rl;
	snprintf(out, outlen, "%s", path);
}

int elf_file__debug(Elf *elf, const char *build_id, const char *path, const char *root,
		    struct elf_dbg *d)
{
	char p[PATH_MAX], inner[PATH_MAX], *slash;
	const char *link = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *data = NULL;
	__u32 crc = 0;
	size_t ln;

	d->fd = -1;
	d->elf = NULL;
	if (strlen(build_id) > 2) {
		snprintf(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, build_id,
			 build_id + 2);
		if (dbg_try(build_id, p, 0, 0, d))
			return 1;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *nm;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		nm = section_name(elf, &sh);
		if (nm && !strcmp(nm, ".gnu_debuglink")) {
			data = elf_getdata(scn, NULL);
			break;
		}
	}
	if (!data || data->d_size < 8)
		return 0;
	link = data->d_buf;
	ln = strnlen(link, data->d_size);
	if (!ln || strchr(link, '/') || ((ln + 4) & ~3ul) + 4 > data->d_size)
		return 0;
	memcpy(&crc, (char *)data->d_buf + ((ln + 4) & ~3ul), 4);
	inner_path(path, root, inner, sizeof(inner));
	slash = strrchr(inner, '/');
	if (!slash)
		return 0;
	*slash = 0;
	snprintf(p, sizeof(p), "%s/usr/lib/debug%s/%s", root, inner, link);
	if (dbg_try(build_id, p, crc, 1, d))
		return 1;
	snprintf(p, sizeof(p), "%s%s/.debug/%s", root, inner, link);
	if (dbg_try(build_id, p, crc, 1, d))
		return 1;
	snprintf(p, sizeof(p), "%s%s/%s", root, inner, link);
	return dbg_try(build_id, p, crc, 1, d);
}
