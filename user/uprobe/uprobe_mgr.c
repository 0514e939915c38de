// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding and probing API code in traced processes (see uprobe_mgr.h).
 *
 * Files are identified by (dev, inode), as the kernel does for uprobes: a uprobe attached
 * with pid -1 on a file's inode is installed in every process that maps that file, now or
 * later, from its first instruction — forked children, exec'd copies and new processes of
 * -a included — and BPF keeps only targets. So a file is examined once; only files never
 * seen before cost a scan, and those show up through EXEC and MAP_EXEC records.
 *
 * The cost of that choice: while recording, other processes mapping the same file take a
 * (filtered) probe hit per call. Attaching per pid instead would miss the first calls of
 * every new child until user space caught up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kdev.h"
#include "elf_syms.h"
#include "link_reaper.h"
#include "probe_site.h"
#include "record_ctx.h"
#include "stats_math.h"
#include "uprobe_mgr.h"
#include "uprobe_multi.h"
#include "scan_cache.h"
#include "libmap.skel.h"

#define MAX_FAMILIES  4
#define MAX_LISTENERS 3
#define MAX_CODE_SEGS 4 /* executable segments of a file kept (for load biases) */
#define MAX_PENDING   1024
#define CODE_PEEK     64  /* prologue bytes given to probe_site__choose */
#define STOP_WAIT_MS  200 /* for a process BPF stopped to reach the stopped state */

struct site {
	const struct ucall_table *table;
	__u32 fn;
	__u64 file_off; /* of the probe: function start + site offset */
	struct probe_site ps;
};

struct obj {
	__u64 dev, ino;
	char *path;   /* as the first process that mapped it showed it */
	int examined; /* symbols looked up for every family */
	struct site *sites;
	__u32 nsites;
	struct bpf_link **links; /* perf-event uprobes (kernels before 6.6) */
	__u32 nlinks;
	int *fds; /* uprobe_multi links */
	__u32 nfds;
	struct elf_syms *syms; /* opened lazily for symbolization, then kept */
	int syms_failed;
	void *heard[MAX_LISTENERS]; /* what each listener's file() returned */
	struct elf_seg code[MAX_CODE_SEGS];
	__u32 ncode;
};

struct mapping {
	__u64 start, end, pgoff, dev, ino;
	struct obj *obj;
};

struct pid_maps {
	struct mapping *v;
	__u32 n;
};

struct fam {
	const struct ucall_table *table;
	struct bpf_program *entry, *ret;
};

struct uprobe_mgr {
	struct record_ctx *ctx;
	struct libmap_bpf *libmap;
	struct fam fams[MAX_FAMILIES];
	__u32 nfams;
	struct uprobe_listener listeners[MAX_LISTENERS];
	__u32 nlisteners;
	struct hmap *objs;	    /* (dev, ino) -> struct obj * */
	struct hmap *pids;	    /* (pid, 0) -> struct pid_maps * (last scan) */
	pid_t pending[MAX_PENDING]; /* pids to rescan; 0 = every process */
	__u32 npending;
	struct scan_cache *cache; /* files with probe sites, across recordings (-a) */
};

struct uprobe_mgr *uprobe_mgr__new(struct record_ctx *ctx)
{
	struct uprobe_mgr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ctx = ctx;
	m->objs = hmap__new(sizeof(struct obj *));
	m->pids = hmap__new(sizeof(struct pid_maps *));
	m->cache = scan_cache__load();
	if (!m->objs || !m->pids || !m->cache) {
		uprobe_mgr__free(m);
		return NULL;
	}
	/* Per-site perf-event uprobes: attach after earlier recordings' teardown, not during. */
	if (!uprobe_multi__supported())
		link_reaper__wait_others(120 * 1000);
	return m;
}

/* Load and attach the new-code reporter (bpf/libmap.bpf.c). */
static int libmap_start(struct uprobe_mgr *m)
{
	struct record_ctx *ctx = m->ctx;
	int err;

	m->libmap = libmap_bpf__open();
	if (!m->libmap)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(m->libmap, ctx);
	/* Launch mode owns its processes: stop them on new code, so no first call is missed. */
	m->libmap->rodata->stop_on_new_code = ctx->opts->cmd != NULL;
	if (uprobe_multi__supported())
		uprobe_multi__prepare(m->libmap->progs.dl_debug_state);
	err = record_ctx__prepare(ctx, m->libmap->obj);
	if (!err)
		err = libmap_bpf__load(m->libmap);
	if (!err)
		err = libmap_bpf__attach(m->libmap);
	return err;
}

struct uprobe_mgr *uprobe_mgr__get(struct record_ctx *ctx, int *err)
{
	struct uprobe_mgr *m = ctx->uprobes;

	*err = 0;
	if (m)
		return m;
	m = uprobe_mgr__new(ctx);
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = libmap_start(m);
	if (*err) {
		uprobe_mgr__free(m);
		return NULL;
	}
	ctx->uprobes = m;
	return m;
}

static void obj__free(struct obj *o)
{
	if (!o)
		return;
	for (__u32 i = 0; i < o->nlinks; i++)
		bpf_link__destroy(o->links[i]);
	for (__u32 i = 0; i < o->nfds; i++)
		close(o->fds[i]);
	free(o->links);
	free(o->fds);
	free(o->sites);
	elf_syms__free(o->syms);
	free(o->path);
	free(o);
}

/*
 * Every file's perf-event uprobes (kernels without uprobe_multi) destroyed together, in
 * parallel: one at a time, `-t cuda` would wait minutes for grace periods (link_reaper.h).
 */
static void objs_unlink(struct uprobe_mgr *m)
{
	struct bpf_link **all = NULL, **grown;
	unsigned int n = 0;
	size_t it = 0;
	void *v;

	while (m->objs && (v = hmap__next(m->objs, &it, NULL))) {
		struct obj *o = *(struct obj **)v;

		if (!o || !o->nlinks)
			continue;
		grown = realloc(all, (n + o->nlinks) * sizeof(*all));
		if (!grown)
			break; /* obj__free destroys what is left, one by one */
		all = grown;
		memcpy(all + n, o->links, o->nlinks * sizeof(*all));
		n += o->nlinks;
		o->nlinks = 0;
	}
	link_reaper__destroy(all, n);
	free(all);
}

void uprobe_mgr__free(struct uprobe_mgr *m)
{
	size_t it = 0;
	void *v;

	if (!m)
		return;
	objs_unlink(m);
	while (m->objs && (v = hmap__next(m->objs, &it, NULL)))
		obj__free(*(struct obj **)v);
	it = 0;
	while (m->pids && (v = hmap__next(m->pids, &it, NULL))) {
		struct pid_maps *pm = *(struct pid_maps **)v;

		if (pm)
			free(pm->v);
		free(pm);
	}
	hmap__free(m->objs);
	hmap__free(m->pids);
	/* What this recording found is there at the next one's start (a failure costs nothing
	 * but that). */
	scan_cache__save(m->cache);
	scan_cache__free(m->cache);
	libmap_bpf__destroy(m->libmap);
	free(m);
}

int uprobe_mgr__add_family(struct uprobe_mgr *m, const struct ucall_table *table,
			   struct bpf_program *entry, struct bpf_program *ret)
{
	if (m->nfams == MAX_FAMILIES)
		return -E2BIG;
	m->fams[m->nfams++] = (struct fam){ table, entry, ret };
	return 0;
}

int uprobe_mgr__add_listener(struct uprobe_mgr *m, const struct uprobe_listener *l)
{
	if (m->nlisteners == MAX_LISTENERS)
		return -E2BIG;
	m->listeners[m->nlisteners] = *l;
	return (int)m->nlisteners++;
}

/* A path that opens PID's mapping even inside a container or after the file was replaced. */
static void mapping_path(char *buf, size_t len, pid_t pid, const struct mapping *mp,
			 const char *path)
{
	snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
		 (unsigned long long)mp->end);
	if (access(buf, R_OK))
		snprintf(buf, len, "/proc/%d/root%s", pid, path);
}

static int site_add(struct obj *o, const struct ucall_table *t, __u32 fn, const struct elf_sym *s,
		    const struct probe_site *ps)
{
	struct site *ns;

	/* Two names for one function (aliases) would report every call twice. */
	for (__u32 i = 0; i < o->nsites; i++)
		if (o->sites[i].file_off == s->file_off + ps->offset)
			return 0;
	ns = realloc(o->sites, (o->nsites + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	o->sites = ns;
	o->sites[o->nsites++] = (struct site){ t, fn, s->file_off + ps->offset, *ps };
	return 0;
}

static int link_add(struct obj *o, struct bpf_link *l)
{
	struct bpf_link **nl = realloc(o->links, (o->nlinks + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	o->links = nl;
	o->links[o->nlinks++] = l;
	return 0;
}

static int fd_add(struct obj *o, int fd)
{
	int *nf = realloc(o->fds, (o->nfds + 1) * sizeof(*nf));

	if (!nf)
		return -ENOMEM;
	o->fds = nf;
	o->fds[o->nfds++] = fd;
	return 0;
}

/* One entry and one return uprobe_multi link per family on O's sites. */
static void obj_attach_multi(struct uprobe_mgr *m, struct obj *o, const char *path)
{
	__u64 *offs = calloc(o->nsites, sizeof(*offs)), *cookies = calloc(o->nsites, sizeof(*offs));
	char what[PATH_MAX + 128];

	for (__u32 f = 0; f < m->nfams && offs && cookies; f++) {
		const struct fam *fam = &m->fams[f];
		__u32 n = 0;

		for (__u32 i = 0; i < o->nsites; i++) {
			if (o->sites[i].table != fam->table)
				continue;
			offs[n] = o->sites[i].file_off;
			cookies[n++] = ucall_api__cookie(fam->table, o->sites[i].fn);
		}
		/* The return probe first: a call whose entry is seen before its return probe
		 * exists leaves a frame no return pops (a running process, -p/-a). */
		for (int ret = 1; ret >= 0 && n; ret--) {
			int fd = uprobe_multi__attach(ret ? fam->ret : fam->entry, path, offs,
						      cookies, n, ret);

			if (fd >= 0 && !fd_add(o, fd))
				continue;
			if (fd >= 0)
				close(fd);
			snprintf(what, sizeof(what), "%u %s %s probes in %s", n, fam->table->family,
				 ret ? "return" : "entry", o->path);
			record_ctx__attach_failed(m->ctx, what, fd < 0 ? fd : -ENOMEM);
			/* Counted per probe, as loss records say. */
			m->ctx->attach_failures += n - 1;
		}
	}
	free(offs);
	free(cookies);
}

static const struct fam *fam_of(const struct uprobe_mgr *m, const struct ucall_table *t)
{
	for (__u32 i = 0; i < m->nfams; i++)
		if (m->fams[i].table == t)
			return &m->fams[i];
	return NULL;
}

/* Entry and return probe on every site of O, for every process (pid -1). */
static void obj_attach(struct uprobe_mgr *m, struct obj *o, const char *path)
{
	if (uprobe_multi__supported()) {
		obj_attach_multi(m, o, path);
		return;
	}
	for (__u32 i = 0; i < o->nsites; i++) {
		const struct site *s = &o->sites[i];
		const struct fam *f = fam_of(m, s->table);
		LIBBPF_OPTS(bpf_uprobe_opts, opts,
			    .bpf_cookie = ucall_api__cookie(s->table, s->fn));
		struct bpf_link *l;
		char what[PATH_MAX + 128];

		for (int ret = 1; ret >= 0 && f; ret--) { /* the return probe first, as above */
			opts.retprobe = ret;
			l = bpf_program__attach_uprobe_opts(ret ? f->ret : f->entry, -1, path,
							    s->file_off, &opts);
			if (!l || link_add(o, l)) {
				int err = l ? -ENOMEM : -errno;

				bpf_link__destroy(l);
				snprintf(what, sizeof(what), "%s %s in %s",
					 ret ? "uretprobe" : "uprobe", s->table->apis[s->fn].name,
					 o->path);
				record_ctx__attach_failed(m->ctx, what, err);
			}
		}
	}
}

/* ld.so: have BPF report every change of the link map (dlopen) from now on. */
static void dl_hook_attach(struct uprobe_mgr *m, struct obj *o, struct elf_syms *syms,
			   const char *path)
{
	struct bpf_link *l;
	struct elf_sym s;
	char what[PATH_MAX + 128];

	if (!m->libmap || elf_syms__find(syms, "_dl_debug_state", &s))
		return;
	if (uprobe_multi__supported()) {
		int fd = uprobe_multi__attach(m->libmap->progs.dl_debug_state, path, &s.file_off,
					      NULL, 1, 0);

		if (fd >= 0 && !fd_add(o, fd))
			return;
		if (fd >= 0)
			close(fd);
		snprintf(what, sizeof(what),
			 "uprobe _dl_debug_state in %s (libraries loaded "
			 "later will not be found)",
			 o->path);
		record_ctx__attach_failed(m->ctx, what, fd < 0 ? fd : -ENOMEM);
		return;
	}
	l = bpf_program__attach_uprobe(m->libmap->progs.dl_debug_state, false, -1, path,
				       s.file_off);
	if (!l || link_add(o, l)) {
		int err = l ? -ENOMEM : -errno;

		bpf_link__destroy(l);
		snprintf(what, sizeof(what),
			 "uprobe _dl_debug_state in %s (libraries loaded "
			 "later will not be found)",
			 o->path);
		record_ctx__attach_failed(m->ctx, what, err);
	}
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

/* Look up every family's functions in a file not seen before; probe what it defines. */
static void obj_examine(struct uprobe_mgr *m, struct obj *o, const char *open_path, pid_t pid)
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
	dl_hook_attach(m, o, syms, path); /* --dry-run too: it finds what CMD loads */
	o->ncode = elf_syms__code_segments(syms, o->code, MAX_CODE_SEGS);
	if (o->ncode > MAX_CODE_SEGS)
		o->ncode = MAX_CODE_SEGS;
	for (__u32 i = 0; i < m->nlisteners; i++)
		o->heard[i] = m->listeners[i].file(m->listeners[i].arg, path, o->path, syms);
	elf_syms__free(syms);
	if (o->nsites && !m->ctx->opts->dry_run) {
		obj_attach(m, o, path);
		/* -v: when a file's probes are live (a test's cue, a user's "why not traced?") */
		if (m->ctx->opts->verbose)
			fprintf(stderr, "bpfsight record: probed %u sites in %s\n", o->nsites,
				o->path);
	}
	if (o->nsites)
		scan_cache__add(m->cache, o->path, o->dev, o->ino);
	close(fd);
}

static struct obj *obj_get(struct uprobe_mgr *m, __u64 dev, __u64 ino, const char *path)
{
	struct obj **slot = hmap__get(m->objs, (struct hkey){ dev, ino }, 1);

	if (!slot)
		return NULL;
	if (!*slot) {
		struct obj *o = calloc(1, sizeof(*o));

		if (!o || !(o->path = strdup(path))) {
			free(o);
			return NULL;
		}
		o->dev = dev;
		o->ino = ino;
		*slot = o;
	}
	return *slot;
}

/*
 * The load bias of code mapping MP: the file offsets it maps are those of one executable
 * segment, whose addresses are its file offsets plus (vaddr - off).
 */
static __u64 mapping_bias(const struct mapping *mp)
{
	const struct obj *o = mp->obj;

	for (__u32 i = 0; i < o->ncode; i++)
		if (o->code[i].off < mp->pgoff + (mp->end - mp->start) &&
		    o->code[i].off + o->code[i].filesz > mp->pgoff)
			return mp->start - mp->pgoff - (o->code[i].vaddr - o->code[i].off);
	return mp->start - mp->pgoff; /* no such segment: as if vaddr == offset */
}

/* Tell the listeners that asked for MP's file that PID maps it (as SHOWN). */
static void notify_mapped(struct uprobe_mgr *m, pid_t pid, const struct mapping *mp,
			  const char *shown)
{
	char open_path[PATH_MAX + 64];
	struct uprobe_mapping um;
	int have_path = 0;

	for (__u32 i = 0; i < m->nlisteners && mp->obj; i++) {
		if (!mp->obj->heard[i])
			continue;
		if (!have_path++) {
			mapping_path(open_path, sizeof(open_path), pid, mp, mp->obj->path);
			um = (struct uprobe_mapping){ mp->start, mp->end, mp->pgoff,
						      mapping_bias(mp), shown };
		}
		m->listeners[i].mapped(m->listeners[i].arg, mp->obj->heard[i], pid, open_path, &um);
	}
}

/* Remember PID's file mappings (for symbolization after it exits). Takes V. */
static void pid_maps_set(struct uprobe_mgr *m, pid_t pid, struct mapping *v, __u32 n)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 1);

	if (!slot) {
		free(v);
		return;
	}
	if (!*slot && !(*slot = calloc(1, sizeof(**slot)))) {
		free(v);
		return;
	}
	free((*slot)->v);
	(*slot)->v = v;
	(*slot)->n = n;
}

/* Scan PID's maps: examine executable files not seen yet. 0, or -errno when PID is gone. */
static int scan_pid(struct uprobe_mgr *m, pid_t pid)
{
	char fn[64], line[PATH_MAX + 256], path[PATH_MAX], open_path[PATH_MAX + 64];
	struct mapping *v = NULL, *nv;
	__u32 n = 0, cap = 0;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int major, minor;
		char perms[8];
		struct mapping mp;
		struct obj *o;

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms,
			   &pgoff, &major, &minor, &ino, path) < 7 ||
		    !ino || path[0] != '/')
			continue;
		mp = (struct mapping){ start, end, pgoff, kdev(major, minor), ino, NULL };
		if (perms[2] != 'x')
			continue;
		o = obj_get(m, mp.dev, mp.ino, path);
		if (!o)
			continue;
		mp.obj = o;
		if (!o->examined) {
			mapping_path(open_path, sizeof(open_path), pid, &mp, path);
			obj_examine(m, o, open_path, pid);
		}
		notify_mapped(m, pid, &mp, path);
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = mp;
	}
	fclose(f);
	/* A process that exited (a zombie shows no maps) keeps the maps it had: its last
	 * stacks are named after they drain. */
	if (!n) {
		free(v);
		return 0;
	}
	pid_maps_set(m, pid, v, n);
	return 0;
}

/*
 * Where CUDA and NCCL libraries usually live. With -a nothing can be stopped, so a process
 * started while recording races the scan its exec triggers; probing these files up front
 * (on their inodes: every process mapping them is covered) takes that race away for them.
 */
static const char *const well_known[] = {
	"/usr/local/cuda*/lib64/lib{cudart,nccl}.so*",
	"/usr/local/cuda*/targets/*/lib/lib{cudart,nccl}.so*",
	"/usr/lib/x86_64-linux-gnu/lib{cuda,cudart,nccl}.so*",
	"/usr/lib64/lib{cuda,cudart,nccl}.so*",
	"/opt/conda/lib/lib{cudart,nccl}.so*",
	"/usr/{local/,}lib/python3*/{dist,site}-packages/nvidia/*/lib/lib{cudart,nccl}.so*",
	"/usr/{local/,}lib/python3*/{dist,site}-packages/torch/lib/libtorch_cuda.so",
	"/opt/conda/lib/python3*/site-packages/nvidia/*/lib/lib{cudart,nccl}.so*",
	"/opt/conda/lib/python3*/site-packages/torch/lib/libtorch_cuda.so",
};

/* Examine the file at PATH before any process maps it (its probes are on its inode). */
static struct obj *prescan(struct uprobe_mgr *m, const char *path)
{
	struct stat st;
	struct obj *o;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	o = obj_get(m, kdev_of(st.st_dev), st.st_ino, path);
	if (o && !o->examined)
		obj_examine(m, o, path, getpid());
	return o;
}

static void prescan_path(void *arg, const char *path)
{
	prescan(arg, path);
}

void *uprobe_mgr__examine(struct uprobe_mgr *m, int listener, const char *path)
{
	struct obj *o = prescan(m, path);

	return o && listener >= 0 && (__u32)listener < m->nlisteners ? o->heard[listener] : NULL;
}

static void prescan_well_known(struct uprobe_mgr *m)
{
	for (size_t i = 0; i < sizeof(well_known) / sizeof(well_known[0]); i++) {
		glob_t g;

		if (glob(well_known[i], GLOB_BRACE | GLOB_NOSORT, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++)
			prescan_path(m, g.gl_pathv[j]);
		globfree(&g);
	}
	/* And every file earlier recordings found code in: short programs seen before. */
	scan_cache__for_each(m->cache, prescan_path, m);
}

int uprobe_mgr__start(struct uprobe_mgr *m)
{
	const struct record_opts *o = m->ctx->opts;
	int err = 0;

	if (o->system_wide) {
		prescan_well_known(m);
		err = uprobe_mgr__scan(m, 0);
	} else {
		if (m->ctx->launch_pid)
			uprobe_mgr__scan(m, m->ctx->launch_pid);
		for (__u32 i = 0; i < o->npids; i++)
			uprobe_mgr__scan(m, o->pids[i]);
	}
	for (__u32 i = 0; i < m->nlisteners; i++)
		if (m->listeners[i].started)
			m->listeners[i].started(m->listeners[i].arg);
	return err;
}

int uprobe_mgr__scan(struct uprobe_mgr *m, pid_t pid)
{
	struct dirent *d;
	DIR *dir;

	if (pid > 0) {
		return scan_pid(m, pid);
	}
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		char *end;
		long p = strtol(d->d_name, &end, 10);

		if (*end || p <= 0 || p == m->ctx->self_pid)
			continue;
		scan_pid(m, p); /* processes that exit meanwhile are fine */
	}
	closedir(dir);
	return 0;
}

static void queue(struct uprobe_mgr *m, pid_t pid)
{
	for (__u32 i = 0; i < m->npending; i++)
		if (m->pending[i] == pid || m->pending[i] == 0)
			return;
	if (m->npending == MAX_PENDING) {
		/* Degrade to rescanning every process, never to forgetting one. */
		m->pending[MAX_PENDING - 1] = 0;
		return;
	}
	m->pending[m->npending++] = pid;
}

/* 1 once thread TID shows the stopped state (its mmap is then complete). */
static int wait_stopped(pid_t pid, pid_t tid)
{
	struct timespec ms = { 0, 1000000 };
	char fn[64], buf[512], *p;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stat", pid, tid);
	for (int i = 0; i < STOP_WAIT_MS; i++) {
		FILE *f = fopen(fn, "re");
		size_t n;

		if (!f)
			return 0;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')'); /* the comm may hold spaces and parentheses */
		if (p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't'))
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/* A forked child has its parent's mappings: symbolization works even if it exits at once. */
static void inherit_maps(struct uprobe_mgr *m, pid_t parent, pid_t child)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)parent, 0 }, 0);
	struct mapping *v;

	if (!slot || !*slot || !(*slot)->n)
		return;
	v = malloc((*slot)->n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, (*slot)->v, (*slot)->n * sizeof(*v));
	pid_maps_set(m, child, v, (*slot)->n); /* may move *slot: not used after */
	slot = hmap__get(m->pids, (struct hkey){ (__u64)child, 0 }, 0);
	for (__u32 i = 0; slot && *slot && i < (*slot)->n; i++)
		notify_mapped(m, child, &(*slot)->v[i], (*slot)->v[i].obj->path);
}

/*
 * A program that exited before its maps could be read (a few ms is enough): its file is
 * still examined, by the name it was started with, so that its next run in this recording,
 * and (through the scan cache) in later ones, is traced from the first call. A relative
 * name is not resolved: the process's working directory is gone with it.
 */
static void exec_file_examine(struct uprobe_mgr *m, const struct bs_map_exec *x)
{
	const char *path = (const char *)(x + 1);
	size_t room = x->h.size - sizeof(*x);
	struct obj **slot = hmap__get(m->objs, (struct hkey){ x->dev, x->ino }, 0);
	struct stat st;

	if ((slot && *slot && (*slot)->examined) || x->h.size <= sizeof(*x) ||
	    !memchr(path, 0, room) || path[0] != '/')
		return;
	if (stat(path, &st) || kdev_of(st.st_dev) != x->dev || st.st_ino != x->ino)
		return; /* replaced since: not the file that ran */
	prescan_path(m, path);
}

/* -v: how late the probes of a new program were live (docs/CUDA.md quotes it). */
static void verbose_exec_scanned(const struct bs_hdr *rec)
{
	char fn[64], exe[PATH_MAX];
	__u64 late = mono_now_ns() - rec->ts;
	ssize_t n;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", rec->pid);
	n = readlink(fn, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	fprintf(stderr,
		"bpfsight record: pid %d (%s): new program scanned and probed %.2f ms "
		"after its exec\n",
		rec->pid, n > 0 ? exe : "exited", late / 1e6);
}

void uprobe_mgr__observe(struct uprobe_mgr *m, const struct bs_hdr *rec)
{
	const struct bs_map_exec *x = (const void *)rec;

	if (rec->type == BS_REC_FORK && rec->size >= sizeof(struct bs_fork)) {
		const struct bs_fork *f = (const void *)rec;

		if (f->child_pid == f->child_tid && f->child_pid != rec->pid)
			inherit_maps(m, rec->pid, f->child_pid);
		return;
	}
	if (rec->type != BS_REC_MAP_EXEC || rec->size < sizeof(*x))
		return;
	if (x->flags & BS_MAP_EXEC_STOPPED) {
		/* Probe the new code now, then let the process go: it waits for us. */
		wait_stopped(rec->pid, rec->tid);
		scan_pid(m, rec->pid);
		kill(rec->pid, SIGCONT);
	} else if (x->flags & BS_MAP_EXEC_EXEC) {
		/*
		 * A new program runs meanwhile (-p, -a): probe it before the ring's other
		 * records, not after the drain. -v says how late its probes were live.
		 */
		scan_pid(m, rec->pid);
		exec_file_examine(m, x);
		if (m->ctx->opts->verbose)
			verbose_exec_scanned(rec);
	} else {
		queue(m, rec->pid);
	}
}

int uprobe_mgr__poll(struct uprobe_mgr *m)
{
	for (__u32 i = 0; i < m->npending; i++) {
		if (m->pending[i])
			scan_pid(m, m->pending[i]); /* a process that is gone is fine */
		else
			uprobe_mgr__scan(m, 0);
	}
	m->npending = 0;
	return 0;
}

static int site_cmp(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->file_off < y->file_off ? -1 : x->file_off > y->file_off;
}

void uprobe_mgr__print_sites(const struct uprobe_mgr *m, FILE *out)
{
	__u32 nobj = 0, nsites = 0, cheap = 0;
	size_t it = 0;
	void *v;

	fprintf(out, "%-6s %-36s %-6s %-20s %-11s %-10s %s\n", "FAMILY", "SYMBOL", "SITE",
		"INSTRUCTION", "COST", "FILE_OFF", "OBJECT");
	while (m && (v = hmap__next(m->objs, &it, NULL))) {
		struct obj *o = *(struct obj **)v;

		if (!o->nsites)
			continue;
		nobj++;
		qsort(o->sites, o->nsites, sizeof(*o->sites), site_cmp);
		for (__u32 i = 0; i < o->nsites; i++) {
			const struct site *s = &o->sites[i];

			fprintf(out, "%-6s %-36s +0x%-4x %-20s %-11s 0x%-8llx %s\n",
				s->table->family, s->table->apis[s->fn].name, s->ps.offset,
				s->ps.insn, probe_cost__name(s->ps.cost),
				(unsigned long long)s->file_off, o->path);
			nsites++;
			cheap += s->ps.cost == PROBE_EMULATED;
		}
	}
	fprintf(out, "%u sites in %u objects: %u emulated, %u single-step\n", nsites, nobj, cheap,
		nsites - cheap);
}

static const struct mapping *pid_mapping(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return NULL;
	for (__u32 i = 0; i < (*slot)->n; i++)
		if (addr >= (*slot)->v[i].start && addr < (*slot)->v[i].end)
			return &(*slot)->v[i];
	return NULL;
}

/*
 * The file mapped at ADDR in PID with its symbols opened, and ADDR as the file's ELF vaddr;
 * NULL when ADDR is in no file mapped executable (or the file cannot be read).
 */
static struct obj *obj_at(struct uprobe_mgr *m, pid_t pid, __u64 addr, __u64 *vaddr)
{
	const struct mapping *mp = pid_mapping(m, pid, addr);
	char open_path[PATH_MAX + 64], root[64];

	if (!mp) {
		scan_pid(m, pid); /* a mapping newer than the last scan */
		mp = pid_mapping(m, pid, addr);
	}
	if (!mp || !mp->obj)
		return NULL;
	if (!mp->obj->syms && !mp->obj->syms_failed) {
		mapping_path(open_path, sizeof(open_path), pid, mp, mp->obj->path);
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		mp->obj->syms = elf_syms__open(open_path, root);
		if (!mp->obj->syms) /* the process is gone: its path as we saw it */
			mp->obj->syms = elf_syms__open(mp->obj->path, NULL);
		mp->obj->syms_failed = !mp->obj->syms;
	}
	if (!mp->obj->syms ||
	    elf_syms__off_to_vaddr(mp->obj->syms, addr - mp->start + mp->pgoff, vaddr))
		return NULL;
	return mp->obj;
}

char *uprobe_mgr__symbolize(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	struct obj *o = obj_at(m, pid, addr, &addr);
	char buf[4096];
	struct elf_sym s;

	if (!o || elf_syms__at(o->syms, addr, &s))
		return NULL;
	demangle(s.name, buf, sizeof(buf));
	return strdup(buf);
}

/*
 * Does a call instruction end right before VADDR? A return address always follows one; an
 * address a frame-pointer walk read from a frame that had no frame pointer is, nearly always,
 * not. Forms: E8 rel32, and FF /2 (call r/m64, with a REX prefix or not) of every length.
 */
static int call_before(const struct elf_syms *s, __u64 vaddr)
{
	__u8 b[8];

	if (vaddr < sizeof(b) || elf_syms__read(s, vaddr - sizeof(b), b, sizeof(b)))
		return 0;
	if (b[3] == 0xe8)
		return 1;
	for (int at = 0; at <= 6; at++) {
		__u8 modrm = b[at + 1], mod = modrm >> 6, rm = modrm & 7;
		int len = 2;

		if (b[at] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4) { /* SIB */
			len++;
			if (mod == 0 && at + 2 < 8 && (b[at + 2] & 7) == 5)
				len += 4;
		}
		if (mod == 0 && rm == 5)
			len += 4; /* rip-relative */
		len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
		if (at + len == 8)
			return 1;
	}
	return 0;
}

/*
 * obj_at for a word that may not be code at all (a word on top of a stack): only an address
 * in a mapping already known, without the new scan of the process's maps obj_at makes.
 */
static struct obj *code_at(struct uprobe_mgr *m, pid_t pid, __u64 addr, __u64 *vaddr)
{
	const struct mapping *mp = addr ? pid_mapping(m, pid, addr) : NULL;

	return mp && mp->obj ? obj_at(m, pid, addr, vaddr) : NULL;
}

static int follows_call(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	__u64 vaddr;
	struct obj *o = code_at(m, pid, addr, &vaddr);

	return o && call_before(o->syms, vaddr);
}

/* The 8 bytes at ADDR of PID's memory (a GOT entry), or 0. */
static __u64 mem_word(pid_t pid, __u64 addr)
{
	char path[64];
	__u64 v = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, &v, sizeof(v), (off_t)addr) != sizeof(v))
		v = 0;
	close(fd);
	return v;
}

/*
 * Where the call before return address RA of PID went: a direct call's (E8 rel32) target,
 * followed through a PLT stub (jmp *GOT(%rip), after endbr64 and bnd or not) to where its GOT
 * entry points now (a libc function called from a program); 0 when no direct call precedes RA.
 */
static __u64 call_dest(struct uprobe_mgr *m, pid_t pid, __u64 ra)
{
	__u64 vaddr, t, got;
	struct obj *o = code_at(m, pid, ra, &vaddr);
	__u8 b[16];
	__s32 rel;
	int at = 0;

	if (!o || vaddr < 5 || elf_syms__read(o->syms, vaddr - 5, b, 5) || b[0] != 0xe8)
		return 0;
	memcpy(&rel, b + 1, sizeof(rel));
	t = ra + (__s64)rel;
	o = code_at(m, pid, t, &vaddr);
	if (!o || elf_syms__read(o->syms, vaddr, b, sizeof(b)))
		return t;
	if (!memcmp(b, "\xf3\x0f\x1e\xfa", 4))
		at = 4; /* endbr64 */
	if (b[at] == 0xf2)
		at++; /* bnd */
	if (b[at] != 0xff || b[at + 1] != 0x25)
		return t;
	memcpy(&rel, b + at + 2, sizeof(rel));
	got = mem_word(pid, t + at + 6 + (__s64)rel);
	return got ? got : t;
}

int uprobe_mgr__return_slot(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
			    const __u64 *top, int ntop)
{
	__u64 vaddr, start;
	struct obj *o = code_at(m, pid, addr, &vaddr);
	struct elf_sym s;
	__u8 b[6]; /* b[0]: the byte before ADDR */
	int at = -1;

	if (!o || !vaddr)
		return -1;
	/* No frame yet, or none any more: the return address is on top (under a pushed %rbp). */
	if (!is_return && !elf_syms__read(o->syms, vaddr - 1, b, sizeof(b))) {
		if (b[1] == 0xc3 || (b[1] == 0xf3 && b[2] == 0xc3))
			at = 0; /* ret, rep ret */
		else if (b[1] == 0x55 && b[2] == 0x48 && b[3] == 0x89 && b[4] == 0xe5)
			at = 0; /* push %rbp; mov %rsp,%rbp */
		else if (b[1] == 0xf3 && b[2] == 0x0f && b[3] == 0x1e && b[4] == 0xfa &&
			 b[5] == 0x55)
			at = 0; /* endbr64; push %rbp */
		else if (b[0] == 0x55 && b[1] == 0x48 && b[2] == 0x89 && b[3] == 0xe5)
			at = 1; /* mov %rsp,%rbp after the push */
		if (at >= 0)
			return at < ntop && follows_call(m, pid, top[at]) ? at : -1;
	}
	/*
	 * Elsewhere (a fast path that never made a frame, a function built without frame
	 * pointers: a libc system-call wrapper) the first word on top that returns into a call
	 * of this very function (its symbol), directly or through a PLT stub.
	 */
	if (elf_syms__at(o->syms, is_return ? vaddr - 1 : vaddr, &s))
		return -1;
	start = addr - (vaddr - s.vaddr);
	for (at = 0; at < ntop; at++)
		if (call_dest(m, pid, top[at]) == start)
			return at;
	return -1;
}

int uprobe_mgr__frame(struct uprobe_mgr *m, pid_t pid, __u64 addr, int is_return,
		      struct uprobe_frame *out)
{
	__u64 vaddr;
	struct obj *o = obj_at(m, pid, addr, &vaddr);
	struct elf_sym s;

	memset(out, 0, sizeof(*out));
	if (!o)
		return -ENOENT;
	out->module = o->path;
	out->vaddr = vaddr;
	out->valid = !is_return || call_before(o->syms, vaddr);
	/* A return address may be past the end of a function that ends in its call. */
	if (!elf_syms__at(o->syms, is_return ? vaddr - 1 : vaddr, &s))
		demangle(s.name, out->func, sizeof(out->func));
	return 0;
}
