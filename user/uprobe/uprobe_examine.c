// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's look at a file seen for the first time (uprobe_mgr_priv.h): every
 * family's functions looked up in its symbols, each at its cheapest safe site, then probed;
 * the listeners told about the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "record_ctx.h"
#include "scan_cache.h"
#include "uprobe_mgr_priv.h"
#include "libmap.skel.h"

#define CODE_PEEK 64 /* prologue bytes given to probe_site__choose */

static int site_add(struct uprobe_obj *o, const struct ucall_table *t, __u32 fn,
		    const struct elf_sym *s, const struct probe_site *ps)
{
	struct uprobe_site *ns;

	/* Two names for one function (aliases) would report every call twice. */
	for (__u32 i = 0; i < o->nsites; i++)
		if (o->sites[i].file_off == s->file_off + ps->offset)
			return 0;
	ns = realloc(o->sites, (o->nsites + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	o->sites = ns;
	o->sites[o->nsites++] = (struct uprobe_site){ t, fn, s->file_off + ps->offset, *ps };
	return 0;
}

int uprobe_mgr__site(const struct elf_syms *syms, const struct elf_sym *sym, struct probe_site *ps)
{
	__u8 code[CODE_PEEK];

	memset(code, 0, sizeof(code));
	if (elf_syms__read(syms, sym->vaddr, code, sizeof(code)))
		return -ENOENT; /* no code bytes (e.g. an undefined import) */
	probe_site__choose(code, sym->size && sym->size < sizeof(code) ? sym->size : sizeof(code),
			   ps);
	return 0;
}

void uprobe_obj__examine(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			 pid_t pid)
{
	struct {
		__u64 dev, ino;
	} key = { o->dev, o->ino };
	char root[64], path[64];
	struct elf_syms *syms;
	__u8 one = 1;
	int fd;

	/*
	 * Hold the file open and name it through our own fd from here on: a short-lived
	 * process can exit (taking its /proc/PID/map_files links with it) between the look
	 * and the attach. If it is already gone, the file stays unexamined for the next one.
	 */
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o->examined = 1;
	snprintf(root, sizeof(root), "/proc/%d/root", pid); /* debug files: the process's view */
	/* Whatever it holds, BPF need not report this file again. */
	if (m->libmap)
		bpf_map_update_elem(bpf_map__fd(m->libmap->maps.known_files), &key, &one, BPF_ANY);
	syms = elf_syms__open(path, root);
	if (!syms) {
		close(fd);
		return; /* not ELF or unreadable: nothing to probe */
	}
	for (__u32 f = 0; f < m->nfams; f++) {
		const struct ucall_table *t = m->fams[f].table;

		for (__u32 fn = 0; fn < t->napis; fn++) {
			struct elf_sym s;
			struct probe_site ps;

			if (elf_syms__find(syms, t->apis[fn].name, &s) ||
			    uprobe_mgr__site(syms, &s, &ps))
				continue;
			if (site_add(o, t, fn, &s, &ps))
				break;
		}
	}
	uprobe_obj__attach_dl_hook(m, o, syms, path); /* --dry-run too: it finds what CMD loads */
	o->ncode = elf_syms__code_segments(syms, o->code, MAX_CODE_SEGS);
	if (o->ncode > MAX_CODE_SEGS)
		o->ncode = MAX_CODE_SEGS;
	for (__u32 i = 0; i < m->nlisteners; i++)
		o->heard[i] = m->listeners[i].file(m->listeners[i].arg, path, o->path, syms);
	elf_syms__free(syms);
	if (o->nsites && !m->ctx->opts->dry_run) {
		uprobe_obj__attach(m, o, path);
		/* -v: when a file's probes are live (a test's cue, a user's "why not traced?") */
		if (m->ctx->opts->verbose)
			fprintf(stderr, "bpfsight record: probed %u sites in %s\n", o->nsites,
				o->path);
	}
	if (o->nsites)
		scan_cache__add(m->cache, o->path, o->dev, o->ino);
	close(fd);
}
