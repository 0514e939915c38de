// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Which files get an unwind table, and when (stack_unwind.h). */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include "hmap.h"
#include "proc_meta.h"
#include "records.h"
#include "stack_unwind.h"
#include "unwind_build.h"
#include "unwind_load.h"
#include "uprobe_mgr.h"

#define MAPS_MAX 1024 /* executable mappings of a process looked at */

struct stack_unwind {
	struct uprobe_mgr *mgr;
	struct unwind_load *load;
	struct hmap *procs;	  /* pid -> __u8: it had a stack cut, its mappings are followed */
	struct unwind_table vdso; /* the vDSO's (n = 0: none) */
	__u64 vdso_size;	  /* the bytes its image spans */
	struct uprobe_code maps[MAPS_MAX];
};

/*
 * The vDSO's table: every process of this kernel maps the image ours is (mapped whole, its
 * section headers and .eh_frame included). Its code (clock_gettime) is where many samples
 * land, and no file maps it.
 */
static void vdso_table(struct stack_unwind *s)
{
	const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	const char *base = (const char *)eh, *names;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shstrndx >= eh->e_shnum)
		return;
	ph = (const void *)(base + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > s->vdso_size)
			s->vdso_size = ph[i].p_vaddr + ph[i].p_memsz;
	sh = (const void *)(base + eh->e_shoff);
	names = base + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, ".eh_frame") &&
		    unwind_table__from_section(base + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr,
					       0, &s->vdso))
			unwind_table__free(&s->vdso);
}

struct stack_unwind *stack_unwind__new(struct uprobe_mgr *mgr, int rows_fd, int procs_fd, int async,
				       int *err)
{
	struct stack_unwind *s = calloc(1, sizeof(*s));

	*err = -ENOMEM;
	if (!s)
		return NULL;
	s->mgr = mgr;
	vdso_table(s);
	s->procs = hmap__new(sizeof(__u8));
	if (s->procs)
		s->load = unwind_load__new(rows_fd, procs_fd, async, err);
	if (!s->load) {
		stack_unwind__free(s);
		return NULL;
	}
	return s;
}

void stack_unwind__free(struct stack_unwind *s)
{
	if (!s)
		return;
	unwind_load__free(s->load);
	unwind_table__free(&s->vdso);
	hmap__free(s->procs);
	free(s);
}

struct unwind_load *stack_unwind__load(struct stack_unwind *s)
{
	return s->load;
}

/*
 * The mapping of PID that C describes (its start, end, file) with its load bias, from the
 * ELF address of ADDR in it: where to read the file, its root for debug files. 0 or -ENOENT.
 */
static int mapping_of(struct stack_unwind *s, pid_t pid, __u64 addr, int rescan,
		      struct unwind_mapping *um, char *open_path, size_t len, char *root)
{
	struct uprobe_code c;

	if (uprobe_mgr__code_at(s->mgr, pid, addr, rescan, &c))
		return -ENOENT;
	snprintf(open_path, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)c.start,
		 (unsigned long long)c.end);
	if (access(open_path, R_OK))
		snprintf(open_path, len, "%s", c.path);
	snprintf(root, 64, "/proc/%d/root", pid);
	*um = (struct unwind_mapping){ .start = c.start,
				       .end = c.end,
				       .bias = addr - c.vaddr,
				       .dev = c.dev,
				       .ino = c.ino,
				       .open_path = open_path,
				       .root = root,
				       .shown = c.path };
	return 0;
}

void stack_unwind__process(struct stack_unwind *s, pid_t pid)
{
	char open_path[PATH_MAX + 64], root[64];
	struct unwind_mapping um;
	int n = uprobe_mgr__code_maps(s->mgr, pid, 1, s->maps, MAPS_MAX);

	for (int i = 0; i < n; i++) {
		um = (struct unwind_mapping){ .dev = s->maps[i].dev, .ino = s->maps[i].ino };
		/* A file's symbols are opened (for its bias) only when it has a table. */
		if (!unwind_load__tried(s->load, &um))
			continue;
		if (!mapping_of(s, pid, s->maps[i].start, 0, &um, open_path, sizeof(open_path),
				root))
			unwind_load__add(s->load, pid, &um);
	}
	um = (struct unwind_mapping){ .start = proc_meta__vdso(pid),
				      .dev = ~0ull,
				      .ino = ~0ull,
				      .shown = "[vdso]",
				      .table = &s->vdso };
	um.end = um.start + s->vdso_size;
	um.bias = um.start;
	if (s->vdso.n && um.start)
		unwind_load__add(s->load, pid, &um);
}

void stack_unwind__cut(struct stack_unwind *s, pid_t pid, const __u64 *w, __u32 n)
{
	char open_path[PATH_MAX + 64], root[64];
	struct unwind_mapping um;
	__u8 *seen = hmap__get(s->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	int fresh = 0;

	for (__u32 i = 0; i < n; i++) {
		if (mapping_of(s, pid, w[i] - !!i, 0, &um, open_path, sizeof(open_path), root) ||
		    unwind_load__tried(s->load, &um))
			continue;
		fresh = 1;
		unwind_load__add(s->load, pid, &um);
	}
	/* Every other mapping of a file already built, registered at once. */
	if (seen && (!*seen || fresh))
		stack_unwind__process(s, pid);
	if (seen)
		*seen = 1;
}

void stack_unwind__observe(struct stack_unwind *s, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;
	struct hkey key = { (__u64)rec->pid, 0 };

	/* New code may sit where a file closed since was (dlclose): the list is made again. */
	if (rec->type == BS_REC_EXEC || rec->type == BS_REC_MAP_EXEC ||
	    (rec->type == BS_REC_EXIT && rec->pid == rec->tid))
		unwind_load__forget(s->load, rec->pid);
	if (rec->type == BS_REC_EXIT && rec->pid == rec->tid)
		hmap__del(s->procs, key);
	/* A process that had a cut: its new code (or its new program) gets its tables. */
	if ((rec->type == BS_REC_EXEC || rec->type == BS_REC_MAP_EXEC) &&
	    hmap__get(s->procs, key, 0))
		stack_unwind__process(s, rec->pid);
	if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f) &&
	    f->child_pid != (__u32)rec->pid && hmap__get(s->procs, key, 0)) {
		__u8 *child = hmap__get(s->procs, (struct hkey){ f->child_pid, 0 }, 1);

		unwind_load__copy(s->load, rec->pid, f->child_pid);
		if (child)
			*child = 1;
	}
}

void stack_unwind__poll(struct stack_unwind *s)
{
	unwind_load__poll(s->load);
}

void stack_unwind__usage(const struct stack_unwind *s, struct unwind_load_usage *out)
{
	unwind_load__usage(s->load, out);
}
