// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Function symbols of one ELF file (see elf_syms.h). The file is mapped by libelf only while
 * it is opened: the names are copied into one buffer (each distinct name once), the symbols
 * into one array, and the file stays open only for elf_syms__read (pread, so a file that is
 * replaced or truncated later cannot fault us). Lookups: a hash of names whose buckets chain
 * every symbol of that name, and an index sorted by address for elf_syms__at, sorted at the
 * first lookup by address: most files are opened only to look names up (the uprobe manager's
 * look at every file a process maps), and the sort was a fifth of their open. The file's
 * checks, tables and debug file are elf_file.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_file.h"
#include "elf_plt.h"
#include "elf_syms.h"
#include "msg.h"
#include "safe_open.h"

#define NONE UINT32_MAX
/*
 * The most symbol-table entries read from one file (with its debug file): the largest real
 * libraries have a few million; a sparse file of a process's making could claim billions,
 * each costing the recorder memory before it is known to be empty.
 */
#define MAX_ENTRIES (16u << 20)

static const char *const src_names[] = { "dynsym", "symtab", "debug" }; /* enum elf_src */

struct seg {
	__u64 vaddr, memsz, off, filesz;
	__u32 flags;
};

struct sym {
	__u64 vaddr;
	__u64 size;
	__u32 name;  /* offset in names */
	__u32 next;  /* next symbol with the same name, or NONE */
	__u32 hash;  /* name_hash() of the name */
	__u8 src;    /* enum elf_src */
	__u8 hidden; /* a non-default version ("foo@VER", not "foo@@VER") */
	__u8 local;  /* STB_LOCAL */
	__u8 object; /* an exported variable (elf_syms__find_data), not a function */
};

struct elf_syms {
	int fd;
	int has_symtab;
	struct seg *segs;
	size_t nsegs;
	struct sym *syms;
	__u32 nsyms;
	__u32 *by_addr; /* indices of the functions in syms, by (vaddr, preference) once SORTED */
	__u32 nfuncs;
	/*
	 * by_addr is sorted by the first lookup that needs it (sorted_index), under SORT_LOCK:
	 * an open table is shared by threads (stacks named by several at once).
	 */
	int sorted;
	pthread_mutex_t sort_lock;
	int names_only; /* elf_syms__open_names: no PLT read, no elf_syms__at */
	__u32 *hash;	/* name hash -> first symbol of that name */
	__u32 hmask;
	char *names;
	size_t names_len, names_cap;
	int nomem;	    /* a name could not be stored while building */
	struct elf_plt plt; /* the PLT stubs, named "malloc@plt" (elf_syms__at only) */
	char build_id[ELF_BUILD_ID_LEN];
};

/*
 * A name's hash, eight bytes at a time: C++ libraries' names run to hundreds of bytes, and
 * a byte at a time (FNV-1a) was most of reading their tables.
 */
static __u32 name_hash(const char *s, size_t len)
{
	const __u64 k = 0xff51afd7ed558ccdull;
	__u64 h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	if (len) {
		w = 0;
		memcpy(&w, s, len);
		h = (h ^ w) * k;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (__u32)(h ^ (h >> 32));
}

/* Lower is better: what find() returns and what at() names when several symbols qualify. */
static int sym_score(const struct sym *y)
{
	return y->local * 8 + y->hidden * 4 + y->src;
}

static int read_segments(struct elf_syms *s, Elf *elf)
{
	GElf_Phdr ph;
	size_t nph, i;

	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	s->segs = calloc(nph ? nph : 1, sizeof(*s->segs));
	if (!s->segs)
		return -ENOMEM;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		s->segs[s->nsegs++] = (struct seg){ .vaddr = ph.p_vaddr,
						    .memsz = ph.p_memsz,
						    .off = ph.p_offset,
						    .filesz = ph.p_filesz,
						    .flags = ph.p_flags };
	}
	return 0;
}

/* The PT_LOAD segment holding VADDR in its file-backed part, or NULL. */
static const struct seg *seg_of(const struct elf_syms *s, __u64 vaddr)
{
	size_t i;

	for (i = 0; i < s->nsegs; i++)
		if (vaddr >= s->segs[i].vaddr && vaddr - s->segs[i].vaddr < s->segs[i].filesz)
			return &s->segs[i];
	return NULL;
}

/* Is VADDR in a PT_LOAD segment's memory (.bss included)? */
static int in_image(const struct elf_syms *s, __u64 vaddr)
{
	for (size_t i = 0; i < s->nsegs; i++)
		if (vaddr >= s->segs[i].vaddr && vaddr - s->segs[i].vaddr < s->segs[i].memsz)
			return 1;
	return 0;
}

/*
 * Symbol I of T if it is a defined function in the main file's code, or a variable .dynsym
 * exports (*OBJECT): its name (without a "@VER"/"@@VER" suffix), that name's length, whether
 * it is a non-default version.
 */
static int candidate(const struct elf_syms *s, const struct elf_table *t, size_t i, GElf_Sym *sym,
		     const char **name, size_t *len, int *hidden, int *object)
{
	const char *str, *at, *end;
	const struct seg *seg;
	int type;

	if (!gelf_getsym(t->syms, (int)i, sym))
		return 0;
	type = GELF_ST_TYPE(sym->st_info);
	*object = type == STT_OBJECT && t->src == ELF_SRC_DYNSYM;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && !*object)
		return 0;
	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || !sym->st_value ||
	    sym->st_name >= t->strs->d_size)
		return 0;
	seg = seg_of(s, sym->st_value);
	if (*object ? !in_image(s, sym->st_value) : !seg || !(seg->flags & PF_X))
		return 0;
	str = (const char *)t->strs->d_buf + sym->st_name;
	if (((const char *)t->strs->d_buf)[t->strs->d_size - 1] == 0) {
		/* Every name ends inside the table: one pass finds its end or its "@VER". */
		end = strchrnul(str, '@');
		at = *end ? end : NULL;
	} else {
		end = memchr(str, 0, t->strs->d_size - sym->st_name);
		if (!end)
			return 0;
		at = memchr(str, '@', end - str);
	}
	if (end == str)
		return 0;
	*hidden = 0;
	if (at) {
		/* .symtab spells versions into the name; .dynsym keeps them in .gnu.version. */
		*hidden = at[1] != '@';
		end = at;
		if (end == str)
			return 0;
	}
	if (t->versym) {
		GElf_Versym vs;

		if (gelf_getversym(t->versym, (int)i, &vs))
			*hidden = !!(vs & 0x8000);
	}
	*name = str;
	*len = end - str;
	return 1;
}

/* Add one symbol: a (name, vaddr) already present is kept once, as first seen. */
static void add_sym(struct elf_syms *s, const char *name, size_t len, const GElf_Sym *sym,
		    enum elf_src src, int hidden, int object)
{
	__u32 h = name_hash(name, len), slot = h & s->hmask, head, k;
	struct sym *y;

	while ((head = s->hash[slot]) != NONE) {
		const char *hn = s->names + s->syms[head].name;

		if (s->syms[head].hash == h && !memcmp(hn, name, len) && hn[len] == 0)
			break;
		slot = (slot + 1) & s->hmask;
	}
	for (k = head; k != NONE; k = s->syms[k].next)
		if (s->syms[k].vaddr == sym->st_value)
			return;
	y = &s->syms[s->nsyms];
	memset(y, 0, sizeof(*y));
	y->vaddr = sym->st_value;
	y->size = sym->st_size;
	y->hash = h;
	y->src = src;
	y->hidden = !!hidden;
	y->local = GELF_ST_BIND(sym->st_info) == STB_LOCAL;
	y->object = !!object;
	if (head == NONE) {
		if (s->names_len + len + 1 > s->names_cap) {
			/* Linkers merge string tails ("bar" inside "foobar"), so names may outgrow
			 * the string tables they came from. */
			size_t cap = 2 * (s->names_len + len + 1);
			char *p = cap <= UINT32_MAX ? realloc(s->names, cap) : NULL;

			if (!p) {
				s->nomem = 1;
				return;
			}
			s->names = p;
			s->names_cap = cap;
		}
		y->name = (__u32)s->names_len;
		memcpy(s->names + s->names_len, name, len);
		s->names[s->names_len + len] = 0;
		s->names_len += len + 1;
		y->next = NONE;
		s->hash[slot] = s->nsyms;
	} else {
		y->name = s->syms[head].name;
		y->next = s->syms[head].next;
		s->syms[head].next = s->nsyms;
	}
	s->nsyms++;
}

static void add_table(struct elf_syms *s, const struct elf_table *t)
{
	const char *name;
	size_t i, len;
	GElf_Sym sym;
	int hidden, object;

	for (i = 0; i < t->n; i++)
		if (candidate(s, t, i, &sym, &name, &len, &hidden, &object))
			add_sym(s, name, len, &sym, t->src, hidden, object);
}

static int by_addr_cmp(const void *a, const void *b, void *ctx)
{
	const struct elf_syms *s = ctx;
	const struct sym *x = &s->syms[*(const __u32 *)a];
	const struct sym *y = &s->syms[*(const __u32 *)b];
	const char *xn = s->names + x->name, *yn = s->names + y->name;
	size_t xl, yl;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	if (sym_score(x) != sym_score(y))
		return sym_score(x) - sym_score(y);
	/* Aliases: the shorter name wins (ncclAllReduce, not pncclAllReduce) */
	xl = strlen(xn);
	yl = strlen(yn);
	if (xl != yl)
		return xl < yl ? -1 : 1;
	return strcmp(xn, yn);
}

static int build(struct elf_syms *s, struct elf_table *tabs, size_t ntabs)
{
	size_t n = 0, bytes = 0, cap = 1, i;

	/* Upper bounds (every entry a function, every string used), trimmed once filled. */
	for (i = 0; i < ntabs; i++) {
		n += tabs[i].n;
		bytes += tabs[i].strs->d_size;
	}
	bytes += 1;
	if (n > MAX_ENTRIES)
		return -E2BIG;
	while (cap < 2 * n)
		cap <<= 1;
	s->syms = malloc((n ? n : 1) * sizeof(*s->syms));
	s->names = malloc(bytes);
	s->names_cap = bytes;
	s->hash = malloc(cap * sizeof(*s->hash));
	if (!s->syms || !s->names || !s->hash)
		return -ENOMEM;
	memset(s->hash, 0xff, cap * sizeof(*s->hash));
	s->hmask = (__u32)cap - 1;
	for (i = 0; i < ntabs; i++)
		add_table(s, &tabs[i]);
	if (s->nomem)
		return -ENOMEM;
	/* Give back what duplicates (dynsym and symtab both naming a function) did not use. */
	if (s->nsyms < n) {
		void *p = realloc(s->syms, (s->nsyms ? s->nsyms : 1) * sizeof(*s->syms));

		if (p)
			s->syms = p;
	}
	if (s->names_len < s->names_cap) {
		void *p = realloc(s->names, s->names_len ? s->names_len : 1);

		if (p)
			s->names = p;
	}
	s->by_addr = malloc((s->nsyms ? s->nsyms : 1) * sizeof(*s->by_addr));
	if (!s->by_addr)
		return -ENOMEM;
	for (i = 0; i < s->nsyms; i++)
		if (!s->syms[i].object)
			s->by_addr[s->nfuncs++] = (__u32)i;
	return 0;
}

/* S's functions by address, sorted now if no lookup has yet (the table is const otherwise). */
static const __u32 *sorted_index(const struct elf_syms *cs)
{
	struct elf_syms *s = (struct elf_syms *)cs;

	if (__atomic_load_n(&s->sorted, __ATOMIC_ACQUIRE))
		return s->by_addr;
	pthread_mutex_lock(&s->sort_lock);
	if (!s->sorted) {
		qsort_r(s->by_addr, s->nfuncs, sizeof(*s->by_addr), by_addr_cmp, s);
		__atomic_store_n(&s->sorted, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->sort_lock);
	return s->by_addr;
}

static struct elf_syms *open_syms(const char *path, const char *root, int names_only)
{
	struct elf_table tabs[3];
	struct elf_dbg d = { .fd = -1 };
	struct elf_syms *s;
	size_t ntabs = 0;
	Elf *elf = NULL;
	int err;

	if (!root)
		root = "";
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&s->sort_lock, NULL);
	s->names_only = names_only;
	s->fd = safe_open__regular(path, NULL);
	if (s->fd < 0) {
		err = s->fd == -EINVAL ? -ENOEXEC : s->fd; /* not a regular file: no ELF file */
		goto fail;
	}
	elf = elf_file__open(s->fd, 0, &err);
	if (!elf)
		goto fail;
	err = read_segments(s, elf);
	if (!err && !names_only)
		err = elf_plt__read(elf, &s->plt);
	if (err)
		goto fail;
	elf_file__build_id(elf, s->build_id, sizeof(s->build_id));
	if (elf_file__table(elf, SHT_DYNSYM, ELF_SRC_DYNSYM, &tabs[ntabs]))
		ntabs++;
	if (elf_file__table(elf, SHT_SYMTAB, ELF_SRC_SYMTAB, &tabs[ntabs])) {
		ntabs++;
		s->has_symtab = 1;
	} else if (elf_file__debug(elf, s->build_id, path, root, &d)) {
		elf_file__table(d.elf, SHT_SYMTAB, ELF_SRC_DEBUG, &tabs[ntabs++]);
		s->has_symtab = 1;
	}
	err = build(s, tabs, ntabs);
	if (err == -E2BIG)
		pr_warn("%s: over %u symbol-table entries: its symbols are not read\n", path,
			MAX_ENTRIES);
	if (d.elf)
		elf_end(d.elf);
	if (d.fd >= 0)
		close(d.fd);
	elf_end(elf);
	if (err) {
		elf = NULL;
		goto fail;
	}
	return s;
fail:
	if (elf)
		elf_end(elf);
	elf_syms__free(s);
	errno = -err;
	return NULL;
}

struct elf_syms *elf_syms__open(const char *path, const char *root)
{
	return open_syms(path, root, 0);
}

struct elf_syms *elf_syms__open_names(const char *path, const char *root)
{
	return open_syms(path, root, 1);
}

void elf_syms__free(struct elf_syms *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->segs);
	free(s->syms);
	free(s->by_addr);
	free(s->hash);
	free(s->names);
	elf_plt__free(&s->plt);
	pthread_mutex_destroy(&s->sort_lock);
	free(s);
}

static void fill(const struct elf_syms *s, const struct sym *y, __u64 size, struct elf_sym *out)
{
	const struct seg *seg = seg_of(s, y->vaddr);

	out->name = s->names + y->name;
	out->vaddr = y->vaddr;
	out->size = size;
	out->file_off = seg ? y->vaddr - seg->vaddr + seg->off : 0;
	out->source = src_names[y->src];
}

/* The best symbol NAME of the kind asked for (a function, or a variable when OBJECT). */
static int find_kind(const struct elf_syms *s, const char *name, int object, struct elf_sym *out)
{
	const struct sym *best = NULL;
	__u32 slot, k, h;
	size_t len;

	if (!s || !name)
		return -EINVAL;
	/* "foo@@VER" asks for the default version, which is what plain "foo" returns. */
	len = strcspn(name, "@");
	h = name_hash(name, len);
	for (slot = h & s->hmask; s->hash[slot] != NONE; slot = (slot + 1) & s->hmask) {
		const struct sym *y = &s->syms[s->hash[slot]];

		if (y->hash != h || memcmp(s->names + y->name, name, len) ||
		    s->names[y->name + len])
			continue;
		for (k = s->hash[slot]; k != NONE; k = s->syms[k].next)
			if (s->syms[k].object == object &&
			    (!best || sym_score(&s->syms[k]) < sym_score(best)))
				best = &s->syms[k];
		break;
	}
	if (!best)
		return -ENOENT;
	if (out)
		fill(s, best, best->size, out);
	return 0;
}

int elf_syms__find(const struct elf_syms *s, const char *name, struct elf_sym *out)
{
	return find_kind(s, name, 0, out);
}

int elf_syms__find_data(const struct elf_syms *s, const char *name, struct elf_sym *out)
{
	return find_kind(s, name, 1, out);
}

int elf_syms__for_each(const struct elf_syms *s, int (*cb)(const struct elf_sym *sym, void *arg),
		       void *arg)
{
	const __u32 *by_addr;
	struct elf_sym e;
	__u32 i;
	int ret;

	if (!s || !cb)
		return -EINVAL;
	by_addr = sorted_index(s);
	for (i = 0; i < s->nfuncs; i++) {
		const struct sym *y = &s->syms[by_addr[i]];

		fill(s, y, y->size, &e);
		ret = cb(&e, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int elf_syms__at(const struct elf_syms *s, __u64 vaddr, struct elf_sym *out)
{
	const struct elf_plt_stub *stub;
	const __u32 *by;
	const struct seg *seg;
	__u32 lo = 0, hi, first, i;
	__u64 size = 0, end;

	if (!s || s->names_only)
		return -EINVAL;
	stub = elf_plt__at(&s->plt, vaddr);
	if (stub) {
		seg = seg_of(s, stub->vaddr);
		if (out)
			*out = (struct elf_sym){
				.name = stub->name,
				.vaddr = stub->vaddr,
				.size = stub->size,
				.file_off = seg ? stub->vaddr - seg->vaddr + seg->off : 0,
				.source = "plt"
			};
		return 0;
	}
	by = sorted_index(s);
	hi = s->nfuncs;
	/* The last symbol starting at or below VADDR. */
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (s->syms[by[mid]].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	first = lo - 1;
	while (first && s->syms[by[first - 1]].vaddr == s->syms[by[lo - 1]].vaddr)
		first--;
	/* The group's first entry is the preferred name; its extent is the largest size. */
	for (i = first; i < s->nfuncs && s->syms[by[i]].vaddr == s->syms[by[first]].vaddr; i++)
		if (s->syms[by[i]].size > size)
			size = s->syms[by[i]].size;
	if (!size) {
		/* Size 0 (assembly, stripped sizes): up to the next symbol or the segment's end. */
		seg = seg_of(s, s->syms[by[first]].vaddr);
		end = i < s->nfuncs ? s->syms[by[i]].vaddr : 0;
		if (seg && (!end || end > seg->vaddr + seg->filesz))
			end = seg->vaddr + seg->filesz;
		size = end - s->syms[by[first]].vaddr;
		/* Nor over a PLT (_init, size 0, is just before it): its stubs are not _init. */
		end = elf_plt__boundary(&s->plt, s->syms[by[first]].vaddr, vaddr);
		if (end)
			size = end - s->syms[by[first]].vaddr;
	}
	if (vaddr - s->syms[by[first]].vaddr >= size)
		return -ENOENT;
	if (out)
		fill(s, &s->syms[by[first]], size, out);
	return 0;
}

int elf_syms__read(const struct elf_syms *s, __u64 vaddr, void *buf, size_t len)
{
	const struct seg *seg = NULL;
	size_t i, avail;
	ssize_t n;

	if (!s || (!buf && len))
		return -EINVAL;
	for (i = 0; i < s->nsegs; i++)
		if (vaddr >= s->segs[i].vaddr && vaddr - s->segs[i].vaddr < s->segs[i].memsz)
			seg = &s->segs[i];
	if (!seg)
		return -ENOENT;
	/* Past the file-backed part (or a file shortened since open) reads as zeros. */
	memset(buf, 0, len);
	if (vaddr - seg->vaddr >= seg->filesz)
		return 0;
	avail = seg->filesz - (vaddr - seg->vaddr);
	if (avail > len)
		avail = len;
	do
		n = pread(s->fd, buf, avail, (off_t)(vaddr - seg->vaddr + seg->off));
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

int elf_syms__off_to_vaddr(const struct elf_syms *s, __u64 off, __u64 *vaddr)
{
	size_t i;

	if (!s || !vaddr)
		return -EINVAL;
	for (i = 0; i < s->nsegs; i++) {
		if (off >= s->segs[i].off && off - s->segs[i].off < s->segs[i].filesz) {
			*vaddr = off - s->segs[i].off + s->segs[i].vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elf_syms__code_segments(const struct elf_syms *s, struct elf_seg *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; s && i < s->nsegs; i++)
		if ((s->segs[i].flags & PF_X) && n++ < max)
			out[n - 1] = (struct elf_seg){ s->segs[i].vaddr, s->segs[i].off,
						       s->segs[i].filesz };
	return n;
}

const char *elf_syms__build_id(const struct elf_syms *s)
{
	return s ? s->build_id : "";
}

int elf_syms__has_symtab(const struct elf_syms *s)
{
	return s ? s->has_symtab : 0;
}
