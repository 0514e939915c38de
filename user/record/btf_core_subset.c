// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each BPF object's CO-RE relocations resolved against the few kernel types they name instead
 * of all of them. libbpf 1.1 finds a relocated type's candidates by walking every type of the
 * kernel's BTF, again for each relocated type of each object (bpf_core_find_cands, whose cache
 * lives for one object's load): the most user CPU of a recorder's start. Given a BTF file as
 * the object's btf_custom_path, it walks that file's types instead.
 *
 * So before an object is opened (bpfsight's static link wraps the skeleton's open, load and
 * destroy: the Makefile's BTF_WRAP), the types its relocations start from are read from its
 * .BTF.ext, and the kernel's types of those names, with every type they hold (members, array
 * elements, typedefs and modifiers; not what a pointer points to), are written in the kernel's
 * order as a small BTF to a memfd, which libbpf reads as /proc/self/fd/N.
 *
 * The relocations come out as against the whole BTF: the candidates are the same types in the
 * same order, and a field's relocation (offset, size, existence, signedness, bit shifts) or an
 * enum value's reads the candidate, its members, array elements and typedefs down to the field
 * and never a pointer's target (a pointer field matches a pointer field whatever it points
 * to). An object whose relocations could read more is left to libbpf's own search: one with a
 * type-based relocation (type ids, existence, size, match: they compare what pointers point
 * to), one from a type that is not a struct, union or enum, one from a name the kernel's BTF
 * lacks (libbpf then looks in the modules' BTF, which a custom BTF turns off), or one whose
 * sections do not read.
 *
 * BPFSIGHT_CORE_BTF=whole leaves every object to libbpf's search (to compare); `record -v`
 * says each object's subset among libbpf's debug lines. Linked into bpfsight only, as
 * btf_shared.c: the unit tests link libbpf.so unwrapped.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "env.h"

int __real_bpf_object__open_skeleton(struct bpf_object_skeleton *s,
				     const struct bpf_object_open_opts *opts);
int __real_bpf_object__load_skeleton(struct bpf_object_skeleton *s);
void __real_bpf_object__destroy_skeleton(struct bpf_object_skeleton *s);
int __wrap_bpf_object__open_skeleton(struct bpf_object_skeleton *s,
				     const struct bpf_object_open_opts *opts);
int __wrap_bpf_object__load_skeleton(struct bpf_object_skeleton *s);
void __wrap_bpf_object__destroy_skeleton(struct bpf_object_skeleton *s);

#define MAX_ROOTS 64 /* distinct relocated type names of one object */
#define MAX_OPEN  32 /* objects opened and not yet loaded */
#define EXT_MAGIC 0xeB9F

/* The kernel's structs, unions and enums by essential name (libbpf's: flavor cut off). */
struct kindex {
	const struct btf *vml;
	__u32 ntypes, mask;
	__u32 *head, *next; /* chains of type ids, 0 ends one */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kindex kx;
static int kx_failed;
/* The memfd given to each opened object, closed once it is loaded or destroyed. */
static struct {
	const struct bpf_object_skeleton *s;
	int fd;
} open_fds[MAX_OPEN];

/* libbpf's bpf_core_essential_name_len: "task_struct___pre514" is "task_struct". */
static size_t essential_len(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = n >= 5 ? n - 5 + 1 : 0; i-- > 0;)
		if (name[i] != '_' && !strncmp(name + i + 1, "___", 3) && name[i + 4] != '_')
			return i + 1;
	return n;
}

static __u32 name_hash(const char *s, size_t len)
{
	__u32 h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static int indexed_kind(const struct btf_type *t)
{
	return btf_is_composite(t) || btf_is_any_enum(t);
}

/* libbpf's btf_kind_core_compat: the kinds a relocation from T may land on. */
static int kind_compat(const struct btf_type *a, const struct btf_type *b)
{
	return btf_kind(a) == btf_kind(b) || (btf_is_any_enum(a) && btf_is_any_enum(b));
}

static int kindex_build(void)
{
	const struct btf *vml = btf__load_vmlinux_btf(); /* the process's one (btf_shared.c) */
	__u32 n, nb = 1;

	if (!vml)
		return -errno;
	n = btf__type_cnt(vml);
	while (nb < n / 4)
		nb <<= 1;
	kx.head = calloc(nb, sizeof(*kx.head));
	kx.next = calloc(n, sizeof(*kx.next));
	if (!kx.head || !kx.next)
		return -ENOMEM;
	for (__u32 id = n - 1; id > 0; id--) { /* chains in the kernel's order */
		const struct btf_type *t = btf__type_by_id(vml, id);
		const char *name;
		__u32 b;

		if (!indexed_kind(t) || !t->name_off)
			continue;
		name = btf__name_by_offset(vml, t->name_off);
		b = name_hash(name, essential_len(name)) & (nb - 1);
		kx.next[id] = kx.head[b];
		kx.head[b] = id;
	}
	kx.vml = vml;
	kx.ntypes = n;
	kx.mask = nb - 1;
	return 0;
}

/* The section NAME of the ELF image (LEN bytes at *DATA), 0; else -1. */
static int elf_section(const char *elf, size_t sz, const char *name, const char **data, size_t *len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr strs, sh;

	if (sz < sizeof(eh))
		return -1;
	memcpy(&eh, elf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(sh) || eh.e_shoff > sz ||
	    eh.e_shnum > (sz - eh.e_shoff) / sizeof(sh) || eh.e_shstrndx >= eh.e_shnum)
		return -1;
	memcpy(&strs, elf + eh.e_shoff + eh.e_shstrndx * sizeof(sh), sizeof(sh));
	if (strs.sh_offset > sz || strs.sh_size > sz - strs.sh_offset)
		return -1;
	for (__u32 i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, elf + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size ||
		    strncmp(elf + strs.sh_offset + sh.sh_name, name, strs.sh_size - sh.sh_name) ||
		    sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_offset > sz || sh.sh_size > sz - sh.sh_offset)
			return -1;
		*data = elf + sh.sh_offset;
		*len = sh.sh_size;
		return 0;
	}
	return -1;
}

static __u32 u32_at(const char *p)
{
	__u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The names the CO-RE relocations of .BTF.ext (EXT, LEN) start from, as ids of LOCAL, into
 * ROOTS: how many (0: none), or -1 when the object is left to libbpf.
 */
static int relo_roots(const struct btf *local, const char *ext, size_t len, __u32 *roots)
{
	__u32 hdr_len, off, size, rec_size, nroots = 0;
	const char *p, *end;

	if (len < 8 || (__u16)u32_at(ext) != EXT_MAGIC)
		return -1;
	hdr_len = u32_at(ext + 4);
	if (hdr_len < 32 || hdr_len > len)
		return hdr_len >= 8 && hdr_len <= len ? 0 : -1; /* no CO-RE part */
	off = u32_at(ext + 24);
	size = u32_at(ext + 28);
	if (!size)
		return 0;
	if (off > len - hdr_len || size > len - hdr_len - off || size < 4)
		return -1;
	p = ext + hdr_len + off;
	end = p + size;
	rec_size = u32_at(p);
	if (rec_size < sizeof(struct bpf_core_relo))
		return -1;
	for (p += 4; p < end;) {
		__u32 nrec;

		if (end - p < 8)
			return -1;
		nrec = u32_at(p + 4);
		p += 8;
		if (nrec > (size_t)(end - p) / rec_size)
			return -1;
		for (; nrec; nrec--, p += rec_size) {
			struct bpf_core_relo r;
			const struct btf_type *t;
			__u32 i;

			memcpy(&r, p, sizeof(r));
			if (r.kind > BPF_CORE_FIELD_RSHIFT_U64 &&
			    r.kind != BPF_CORE_ENUMVAL_EXISTS && r.kind != BPF_CORE_ENUMVAL_VALUE)
				return -1;
			t = btf__type_by_id(local, r.type_id);
			if (!t || !indexed_kind(t) || !t->name_off)
				return -1;
			for (i = 0; i < nroots && roots[i] != r.type_id; i++)
				;
			if (i == nroots) {
				if (nroots == MAX_ROOTS)
					return -1;
				roots[nroots++] = r.type_id;
			}
		}
	}
	return nroots;
}

/* FN on every type id T refers to (a pointer's target too), which FN may change. */
static void each_ref(struct btf_type *t, void (*fn)(__u32 *id, void *arg), void *arg)
{
	__u16 vlen = btf_vlen(t);

	switch (btf_kind(t)) {
	case BTF_KIND_ARRAY:
		fn(&btf_array(t)->type, arg);
		fn(&btf_array(t)->index_type, arg);
		break;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		for (__u16 i = 0; i < vlen; i++)
			fn(&btf_members(t)[i].type, arg);
		break;
	case BTF_KIND_FUNC_PROTO:
		fn(&t->type, arg);
		for (__u16 i = 0; i < vlen; i++)
			fn(&btf_params(t)[i].type, arg);
		break;
	case BTF_KIND_DATASEC:
		for (__u16 i = 0; i < vlen; i++)
			fn(&btf_var_secinfos(t)[i].type, arg);
		break;
	case BTF_KIND_PTR:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
	case BTF_KIND_TYPE_TAG:
		fn(&t->type, arg);
		break;
	default:
		break;
	}
}

/* The types a subset holds (IN), and those whose references are still to be read. */
struct walk {
	__u8 *in;
	__u32 *stack, top;
};

static void take(__u32 *id, void *arg)
{
	struct walk *w = arg;

	if (*id && *id < kx.ntypes && !w->in[*id]) {
		w->in[*id] = 1;
		w->stack[w->top++] = *id;
	}
}

/* Type ID and every type it holds, but what a pointer points to (see the top), into W. */
static void hold(__u32 id, struct walk *w)
{
	take(&id, w);
	while (w->top) {
		/* Read only: take() never writes the id it is given. */
		struct btf_type *t = (struct btf_type *)btf__type_by_id(kx.vml, w->stack[--w->top]);

		if (!btf_is_ptr(t))
			each_ref(t, take, w);
	}
}

static void renumber(__u32 *id, void *newid)
{
	*id = ((const __u32 *)newid)[*id];
}

/* The kernel's types of ROOTS (ids of LOCAL) and what they hold, as a new BTF; NULL: none. */
static struct btf *subset(const struct btf *local, const __u32 *roots, int nroots)
{
	const struct btf *vml = kx.vml;
	struct walk w = { .in = calloc(kx.ntypes, 1), .stack = calloc(kx.ntypes, sizeof(__u32)) };
	__u32 *newid = calloc(kx.ntypes, sizeof(*newid));
	struct btf *out = NULL;

	if (!w.in || !w.stack || !newid)
		goto done;
	for (int r = 0; r < nroots; r++) {
		const struct btf_type *lt = btf__type_by_id(local, roots[r]);
		const char *name = btf__name_by_offset(local, lt->name_off);
		size_t len = essential_len(name);
		int cands = 0;

		for (__u32 id = kx.head[name_hash(name, len) & kx.mask]; id; id = kx.next[id]) {
			const struct btf_type *t = btf__type_by_id(vml, id);
			const char *vname = btf__name_by_offset(vml, t->name_off);

			if (essential_len(vname) != len || strncmp(vname, name, len))
				continue;
			cands += kind_compat(lt, t);
			hold(id, &w);
		}
		if (!cands) /* libbpf would look in the modules' BTF */
			goto done;
	}
	out = btf__new_empty();
	if (!out)
		goto done;
	for (__u32 id = 1; id < kx.ntypes; id++) {
		int nid;

		if (!w.in[id])
			continue;
		nid = btf__add_type(out, vml, btf__type_by_id(vml, id));
		if (nid < 0) {
			btf__free(out);
			out = NULL;
			goto done;
		}
		newid[id] = nid;
	}
	/* The subset is ours to change: libbpf hands its types out as const only. */
	for (__u32 id = 1; id < btf__type_cnt(out); id++)
		each_ref((struct btf_type *)btf__type_by_id(out, id), renumber, newid);
done:
	free(w.in);
	free(w.stack);
	free(newid);
	return out;
}

/* MSG among libbpf's debug lines: printed by `record -v`, where libbpf prints its own. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	libbpf_print_fn_t print = libbpf_set_print(NULL); /* the one set, read back */
	va_list ap;

	libbpf_set_print(print);
	if (!print)
		return;
	va_start(ap, fmt);
	print(LIBBPF_DEBUG, fmt, ap);
	va_end(ap);
}

/* A memfd holding S's subset of the kernel's BTF, or -1: S is left to libbpf's search. */
static int subset_fd(const struct bpf_object_skeleton *s)
{
	const char *btf_data, *ext;
	size_t btf_len, ext_len;
	__u32 roots[MAX_ROOTS], raw_len;
	struct btf *local = NULL, *sub = NULL;
	const void *raw;
	int nroots, fd = -1;

	if (elf_section(s->data, s->data_sz, ".BTF", &btf_data, &btf_len) ||
	    elf_section(s->data, s->data_sz, ".BTF.ext", &ext, &ext_len) || btf_len > UINT32_MAX)
		return -1;
	local = btf__new(btf_data, btf_len);
	if (!local)
		return -1;
	nroots = relo_roots(local, ext, ext_len, roots);
	if (nroots <= 0)
		goto done;
	if (!kx.vml && !kx_failed)
		kx_failed = kindex_build() < 0;
	if (kx_failed)
		goto done;
	sub = subset(local, roots, nroots);
	raw = sub ? btf__raw_data(sub, &raw_len) : NULL;
	if (!raw)
		goto done;
	fd = memfd_create("bpfsight-core-btf", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, raw, raw_len) != (ssize_t)raw_len) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		say("bpfsight: %s: CO-RE relocations from %d type names searched in %u of the kernel's %u "
		    "types\n",
		    s->name, nroots, btf__type_cnt(sub) - 1, kx.ntypes - 1);
done:
	btf__free(sub);
	btf__free(local);
	return fd;
}

int __wrap_bpf_object__open_skeleton(struct bpf_object_skeleton *s,
				     const struct bpf_object_open_opts *opts)
{
	LIBBPF_OPTS(bpf_object_open_opts, mine);
	char path[64];
	int slot = -1, fd = -1;

	if (env__trusted("BPFSIGHT_CORE_BTF") &&
	    !strcmp(env__trusted("BPFSIGHT_CORE_BTF"), "whole"))
		return __real_bpf_object__open_skeleton(s, opts);
	if (opts &&
	    opts->sz >= offsetof(struct bpf_object_open_opts, btf_custom_path) +
				sizeof(opts->btf_custom_path) &&
	    opts->btf_custom_path)
		return __real_bpf_object__open_skeleton(s, opts);
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_OPEN && slot < 0; i++)
		if (!open_fds[i].s)
			slot = i;
	if (slot >= 0)
		fd = subset_fd(s);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (fd >= 0 && access(path, R_OK)) { /* no /proc: libbpf could not read it */
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		open_fds[slot].s = s;
		open_fds[slot].fd = fd;
	}
	pthread_mutex_unlock(&lock);
	if (fd < 0)
		return __real_bpf_object__open_skeleton(s, opts);
	if (opts)
		memcpy(&mine, opts, opts->sz < sizeof(mine) ? opts->sz : sizeof(mine));
	mine.sz = sizeof(mine);
	mine.btf_custom_path = path; /* libbpf keeps a copy */
	return __real_bpf_object__open_skeleton(s, &mine);
}

static void close_fd_of(const struct bpf_object_skeleton *s)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_OPEN; i++)
		if (open_fds[i].s == s) {
			close(open_fds[i].fd);
			open_fds[i].s = NULL;
		}
	pthread_mutex_unlock(&lock);
}

int __wrap_bpf_object__load_skeleton(struct bpf_object_skeleton *s)
{
	int err = __real_bpf_object__load_skeleton(s);

	close_fd_of(s);
	return err;
}

void __wrap_bpf_object__destroy_skeleton(struct bpf_object_skeleton *s)
{
	close_fd_of(s);
	__real_bpf_object__destroy_skeleton(s);
}
