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
	/* Mapped whole from its start: its ELF addresses are offsets in the mapping. */
	s->vdso.nsegs = 1;
	s->vdso.segs[0] = (struct unwind_seg){ 0, 0, s->vdso_size };
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
	free(s);
}

struct unwind_load *stack_unwind__load(struct stack_unwind *s)
{
	return s->load;
}

/* PID's mapping C, where to read its file (OPEN_PATH, ROOT: LEN and 64 bytes), into UM. */
static void mapping_of(pid_t pid, const struct uprobe_code *c, struct unwind_mapping *um,
		       char *open_path, size_t len, char *root)
{
	snprintf(open_path, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)c->start,
		 (unsigned long long)c->end);
	if (access(open_path, R_OK))
		snprintf(open_path, len, "%s", c->path);
	snprintf(root, 64, "/proc/%d/root", pid);
	*um = (struct unwind_mapping){ .start = c->start,
				       .end = c->end,
				       .pgoff = c->pgoff,
				       .dev = c->dev,
				       .ino = c->ino,
				       .open_path = open_path,
				       .root = root,
				       .shown = c->path };
}

void stack_unwind__process(struct stack_unwind *s, pid_t pid)
{
	char open_path[PATH_MAX + 64], root[64];
	struct unwind_mapping um;
	int n = uprobe_mgr__code_maps(s->mgr, pid, 1, s->maps, MAPS_MAX);

	for (int i = 0; i < n; i++) {
		mapping_of(pid, &s->maps[i], &um, open_path, sizeof(open_path), root);
		unwind_load__add(s->load, pid, &um);
	}
	um = (struct unwind_mapping){ .start = proc_meta__vdso(pid),
				      .dev = ~0ull,
				      .ino = ~0ull,
				      .shown = "[vdso]",
				      .table = &s->vdso };
	um.end = um.start + s->vdso_size;
	if (s->vdso.n && um.start)
		unwind_load__add(s->load, pid, &um);
	unwind_load__flush(s->load);
}

size_t stack_unwind__hold(struct stack_unwind *s, pid_t pid, __u64 deadline)
{
	return unwind_load__wait(s->load, pid, deadline);
}

void stack_unwind__cut(struct stack_unwind *s, pid_t pid, const __u64 *w, __u32 n, int eager)
{
	char open_path[PATH_MAX + 64], root[64];
	struct unwind_mapping um;
	struct uprobe_code c;
	int fresh = 0, known = 0;

	for (__u32 i = 0; i < n; i++) {
		if (uprobe_mgr__code_at(s->mgr, pid, w[i] - !!i, 0, &c))
			continue;
		mapping_of(pid, &c, &um, open_path, sizeof(open_path), root);
		if (unwind_load__tried(s->load, &um)) {
			/*
			 * Built for another process (one rank of four): this one's mapping of it
			 * is registered too, else its stacks stay cut where the other's are
			 * whole (`bpfsight stacks` over a job's ranks, which registers no
			 * process up front).
			 */
			known |= !unwind_load__add(s->load, pid, &um);
			continue;
		}
		fresh = 1;
		if (eager)
			break;
		unwind_load__add(s->load, pid, &um);
	}
	/* A file never tried: mapped since the process was last looked at (or never was). */
	if (fresh && eager)
		stack_unwind__process(s, pid);
	else if (fresh || known)
		unwind_load__flush(s->load);
}

void stack_unwind__observe(struct stack_unwind *s, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;

	switch (rec->type) {
	case BS_REC_EXEC:
	case BS_REC_MAP_EXEC:
		/*
		 * A new program (BPF dropped the old one's list at the exec) or new code: the
		 * list is made again, so a dlclose'd file's place is never walked by its old
		 * table; BPF keeps the old list until the new one replaces it.
		 */
		unwind_load__reset(s->load, rec->pid);
		stack_unwind__process(s, rec->pid);
		break;
	case BS_REC_FORK:
		if (rec->size >= sizeof(*f) && f->child_pid != (__u32)rec->pid)
			unwind_load__copy(s->load, rec->pid, f->child_pid);
		break;
	case BS_REC_EXIT:
		if (rec->pid == rec->tid)
			unwind_load__forget(s->load, rec->pid);
		break;
	default:
		break;
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
