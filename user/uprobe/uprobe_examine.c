// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's look at a file seen for the first time (uprobe_mgr_priv.h): every
 * family's functions looked up in its symbols, each at its cheapest safe site, then probed;
 * the listeners told about the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "elf_strref.h"
#include "record_ctx.h"
#include "safe_open.h"
#include "scan_cache.h"
#include "uprobe_mgr_priv.h"
#include "libmap.skel.h"
#include "msg.h"

#define CODE_PEEK 64 /* prologue bytes given to probe_site__choose */
/*
 * A static runtime loads the names of all its entry points (CUDA 13's: every "cuda" name of
 * the table; older ones most of them). Fewer than this in a file are strings of some other
 * code (nvrtc's, a profiler's or a logger's table of API names), not a runtime: its .text is
 * not searched, and nothing is probed.
 */
#define STRREF_MIN 32

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

/*
 * T's entries with its strref_prefix, in a file where none has a symbol: a stripped static
 * runtime (cuBLASLt's), found by the name strings its entry points load (elf_strref.h).
 */
static void strref_sites(struct uprobe_mgr *m, struct uprobe_obj *o, const struct ucall_table *t,
			 const struct elf_syms *syms, int fd)
{
	size_t plen = strlen(t->strref_prefix);
	struct elf_seg segs[MAX_CODE_SEGS];
	struct elf_strref_stats st;
	struct timespec t0, t1;
	const char **names;
	__u64 *vaddr;
	size_t nseg;
	int found;

	for (__u32 fn = 0; fn < t->napis; fn++) {
		struct elf_sym s;

		if (!strncmp(t->apis[fn].name, t->strref_prefix, plen) &&
		    !elf_syms__find(syms, t->apis[fn].name, &s))
			return; /* symbols name this runtime: they were used */
	}
	names = calloc(t->napis, sizeof(*names));
	vaddr = calloc(t->napis, sizeof(*vaddr));
	if (!names || !vaddr)
		goto out;
	for (__u32 fn = 0; fn < t->napis; fn++)
		names[fn] = t->apis[fn].name;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	found = elf_strref__find(fd, t->strref_prefix, names, t->napis, STRREF_MIN, vaddr, &st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* -v: what the search found and cost (bench/RESULTS.md) */
	if (m->ctx->opts->verbose && (found > 0 || st.rodata_bytes >= (1u << 20)))
		pr_info("%d %s entry points found by name in %s (%u names, %u "
			"ambiguous; %llu+%llu MB searched in %.1f ms)\n",
			found, t->family, o->path, st.names, st.ambiguous,
			(unsigned long long)(st.rodata_bytes >> 20),
			(unsigned long long)(st.text_bytes >> 20),
			(double)(t1.tv_sec - t0.tv_sec) * 1e3 +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (found > 0 && found < STRREF_MIN)
		goto out;
	nseg = elf_syms__code_segments(syms, segs, MAX_CODE_SEGS);
	if (nseg > MAX_CODE_SEGS)
		nseg = MAX_CODE_SEGS;
	for (__u32 fn = 0; found > 0 && fn < t->napis; fn++) {
		struct elf_sym s = { .name = names[fn], .vaddr = vaddr[fn], .source = "strref" };
		struct probe_site ps;
		size_t i;

		if (!vaddr[fn])
			continue;
		for (i = 0; i < nseg; i++)
			if (vaddr[fn] - segs[i].vaddr < segs[i].filesz)
				break;
		if (i == nseg)
			continue; /* not in the code the file maps: nothing to probe */
		s.file_off = segs[i].off + (vaddr[fn] - segs[i].vaddr);
		if (uprobe_mgr__site(syms, &s, &ps) || site_add(o, t, fn, &s, &ps))
			continue;
	}
out:
	free(names);
	free(vaddr);
}

void uprobe_obj__examine(struct uprobe_mgr *m, struct uprobe_obj *o, const char *open_path,
			 pid_t pid)
{
	struct {
		__u64 dev, ino;
	} key = { o->dev, o->ino };
	char path[64], root[64];
	struct elf_syms *syms;
	__u8 one = 1;
	int fd;

	/*
	 * Hold the file open and name it through our own fd from here on: a short-lived
	 * process can exit (taking its /proc/PID/map_files links with it) between the look
	 * and the attach. If it is already gone, the file stays unexamined for the next one.
	 */
	snprintf(root, sizeof(root), "/proc/%d/root", pid); /* debug files: the process's view */
	if (uprobe_obj__first_reads(m, o, open_path, root, &fd, &syms)) {
		o->examined = 1; /* its reads stalled: never again */
		return;
	}
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o->examined = 1;
	/* Whatever it holds, BPF need not report this file again. */
	if (m->libmap)
		bpf_map_update_elem(bpf_map__fd(m->libmap->maps.known_files), &key, &one, BPF_ANY);
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
		if (t->strref_prefix)
			strref_sites(m, o, t, syms, fd);
	}
	uprobe_obj__attach_dl_hook(m, o, syms, path); /* --dry-run too: it finds what CMD loads */
	o->ncode = elf_syms__code_segments(syms, o->code, MAX_CODE_SEGS);
	if (o->ncode > MAX_CODE_SEGS)
		o->ncode = MAX_CODE_SEGS;
	o->heard = m->nlisteners ? calloc(m->nlisteners, sizeof(*o->heard)) : NULL;
	o->nheard = o->heard ? m->nlisteners : 0; /* no memory: no listener hears of it */
	for (__u32 k = 0; k < 2 * o->nheard; k++) {
		__u32 i = uprobe_mgr__listener_order(m, k);

		if (i < o->nheard && m->listeners[i].file)
			o->heard[i] =
				m->listeners[i].file(m->listeners[i].arg, path, o->path, syms);
	}
	elf_syms__free(syms);
	if (o->nsites && !m->ctx->opts->dry_run) {
		uprobe_obj__attach(m, o, path);
		/*
		 * -v: when a file's probes are live (a test's cue, a user's "why not traced?"):
		 * scoped, once they are in a process (uprobe_mgr__link_pid).
		 */
		if (m->ctx->opts->verbose && !m->scoped)
			pr_info("probed %u sites in %s\n", o->nsites, o->path);
		o->say_probed = m->ctx->opts->verbose && m->scoped;
	}
	if (o->nsites)
		scan_cache__add(m->cache, o->path, o->dev, o->ino);
	close(fd);
}
