// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family's probes: PyTorch's allocator code, wherever a file holds it (libc10.so,
 * libc10_cuda.so, a libtorch with c10 linked in), found by the uprobe manager's discovery.
 * The functions are probed in each traced process that maps the file (uprobe_mgr__attach_links
 * with pid 0: a link of its own per process, or on the file under -a): a process is measured
 * from its first allocation, a DataLoader worker forked in launch mode too (held until its
 * links are in; -p's: once its fork is read). The CUDA caching allocator's USDT site
 * pytorch:malloc has a semaphore the kernel raises in the processes its link covers, so it
 * goes on each target process (on every process with -a): other processes' allocators never
 * see it raised.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "elf_syms.h"
#include "mem_state.h"
#include "probe_site.h"
#include "uprobe_mgr.h"
#include "usdt_arg.h"
#include "usdt_notes.h"

/*
 * c10's functions by their mangled names (the Itanium ABI's; docs/MEMORY.md, "Where the data
 * comes from", says which torch has which).
 */
static const char *const fn_names[MEM_NFNS][2] = {
	[MEM_FN_CPU_NEW] = { "_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm" },
	[MEM_FN_CPU_DELETE] = { "_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv" },
	[MEM_FN_CPU_OOM] = { "_ZN3c1025ProfiledCPUMemoryReporter11OutOfMemoryEm" },
	/* Their totals were int64_t until 2.x made them size_t: the same registers. */
	[MEM_FN_REPORT] = { "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE",
			    "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE" },
	[MEM_FN_REPORT_OOM] = { "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE",
				"_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE" },
};

static const char *const fn_shown[MEM_NFNS] = {
	[MEM_FN_CPU_NEW] = "ProfiledCPUMemoryReporter::New",
	[MEM_FN_CPU_DELETE] = "ProfiledCPUMemoryReporter::Delete",
	[MEM_FN_CPU_OOM] = "ProfiledCPUMemoryReporter::OutOfMemory",
	[MEM_FN_REPORT] = "reportMemoryUsageToProfiler",
	[MEM_FN_REPORT_OOM] = "reportOutOfMemoryToProfiler",
};

/*
 * The program of function FN: New and reportMemoryUsageToProfiler share mem_alloc, the two
 * out-of-memory functions mem_oom, told apart by their probes' cookie (fn_cookie).
 */
static struct bpf_program *fn_prog(struct mem_bpf *skel, int fn)
{
	switch (fn) {
	case MEM_FN_CPU_NEW:
	case MEM_FN_REPORT:
		return skel->progs.mem_alloc;
	case MEM_FN_CPU_DELETE:
		return skel->progs.mem_cpu_delete;
	default:
		return skel->progs.mem_oom;
	}
}

static __u64 fn_cookie(int fn)
{
	return fn == MEM_FN_REPORT || fn == MEM_FN_REPORT_OOM ? BS_MEM_SRC_REPORT : BS_MEM_SRC_CPU;
}

/* PROG on PATH at OFF into L, for process PID (0: every one): uprobe_mgr__attach_links. */
static int probe(struct mem_state *st, struct uprobe_links *l, const struct bpf_program *prog,
		 pid_t pid, const char *path, __u64 off, const __u64 *sema, const __u64 *cookie,
		 const char *what, const char *object)
{
	struct uprobe_multi_opts o = { .pid = pid, .ref_ctr_offsets = sema, .cookies = cookie };

	return uprobe_mgr__attach_links(st->uprobes, "mem", l, prog, path, &off, 1, &o, what,
					object);
}

/* The pytorch:malloc site of the file N describes, into F (its arguments into BPF's table). */
static void find_usdt(struct mem_state *st, struct mem_file *f, const struct usdt_notes *n)
{
	struct bs_usdt_site site = {};
	__u32 key = st->usdt_sites;

	for (__u32 i = 0; i < usdt_notes__count(n); i++) {
		const struct usdt_note *u = usdt_notes__get(n, i);

		if (strcmp(u->provider, "pytorch") || strcmp(u->name, "malloc"))
			continue;
		/* malloc(ptr, device, size, stream), their sizes as the note says (they vary). */
		if (u->args_err || u->nargs != 4)
			return;
		for (int a = 0; a < 4; a++)
			if (!(site.arg[a] = usdt_arg__spec(&u->arg[a])))
				return;
		if (key >= bpf_map__max_entries(st->skel->maps.mem_usdt_sites) ||
		    bpf_map_update_elem(bpf_map__fd(st->skel->maps.mem_usdt_sites), &key, &site, 0))
			return;
		f->usdt_off = u->pc_off;
		f->usdt_sema = u->sema_off;
		f->usdt_site = ++st->usdt_sites;
		return; /* one site per file: the allocator's */
	}
}

void *mem_on_file(void *arg, const char *path, const char *shown, const struct elf_syms *syms)
{
	struct mem_state *st = arg;
	struct mem_file *f = calloc(1, sizeof(*f));
	struct usdt_notes *n;
	struct elf_sym sym;
	int found = 0;

	if (!f)
		return NULL;
	for (int i = 0; i < MEM_NFNS; i++) {
		struct probe_site ps;
		__u64 off, cookie;

		if (elf_syms__find(syms, fn_names[i][0], &sym) &&
		    (!fn_names[i][1] || elf_syms__find(syms, fn_names[i][1], &sym)))
			continue;
		found = 1;
		off = uprobe_mgr__site(syms, &sym, &ps) ? sym.file_off : sym.file_off + ps.offset;
		cookie = fn_cookie(i);
		if (!st->ctx->opts->dry_run && !probe(st, &f->fn[i], fn_prog(st->skel, i), 0, path,
						      off, NULL, &cookie, fn_shown[i], shown))
			st->probed++;
	}
	n = found ? usdt_notes__open(path) : NULL;
	if (n)
		find_usdt(st, f, n);
	usdt_notes__free(n);
	if (!found) {
		free(f);
		return NULL;
	}
	f->path = strdup(shown);
	f->next = st->files;
	st->files = f;
	if (f->usdt_site && st->ctx->opts->system_wide && !st->ctx->opts->dry_run) {
		__u64 cookie = f->usdt_site - 1;

		probe(st, &f->usdt_all, st->skel->progs.mem_usdt_malloc, 0, path, f->usdt_off,
		      &f->usdt_sema, &cookie, "pytorch:malloc", shown);
	}
	return f;
}

/* A target PID maps F: its own link on F's USDT site (once). */
void mem_on_mapped(void *arg, void *cookie, pid_t pid, const char *path,
		   const struct uprobe_mapping *mp)
{
	struct mem_state *st = arg;
	struct mem_file *f = cookie;
	struct mem_usdt_proc *p;
	__u64 site;

	if (!f->usdt_site || st->ctx->opts->system_wide || st->ctx->opts->dry_run)
		return;
	for (p = st->procs; p; p = p->next)
		if (p->pid == pid && p->file == f)
			return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	site = f->usdt_site - 1;
	if (probe(st, &p->link, st->skel->progs.mem_usdt_malloc, pid, path, f->usdt_off,
		  &f->usdt_sema, &site, "pytorch:malloc", mp->shown)) {
		free(p);
		return;
	}
	p->pid = pid;
	p->file = f;
	p->next = st->procs;
	st->procs = p;
}

void mem_proc_gone(struct mem_state *st, pid_t pid)
{
	struct mem_usdt_proc **pp = &st->procs;

	while (*pp) {
		struct mem_usdt_proc *p = *pp;

		if (p->pid != pid) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		uprobe_links__detach(&p->link);
		free(p);
	}
}

void mem_unlink_all(struct mem_state *st)
{
	/* Entry probes only: nothing waits for a return. */
	for (struct mem_usdt_proc *p = st->procs; p; p = p->next)
		uprobe_links__detach(&p->link);
	for (struct mem_file *f = st->files; f; f = f->next) {
		for (int i = 0; i < MEM_NFNS; i++)
			uprobe_links__detach(&f->fn[i]);
		uprobe_links__detach(&f->usdt_all);
	}
}

void mem_files_free(struct mem_state *st)
{
	while (st->procs) {
		struct mem_usdt_proc *p = st->procs;

		st->procs = p->next;
		uprobe_links__detach(&p->link);
		free(p);
	}
	while (st->files) {
		struct mem_file *f = st->files;

		st->files = f->next;
		for (int i = 0; i < MEM_NFNS; i++)
			uprobe_links__detach(&f->fn[i]);
		uprobe_links__detach(&f->usdt_all);
		free(f->path);
		free(f);
	}
}
