// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's process discovery (uprobe_mgr_priv.h): every executable file mapping
 * of a process read from /proc/PID/maps, each file not seen before examined; the first scan;
 * files examined before any process maps them; and where an address of a process is, for
 * symbolization.
 */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "array.h"
#include "kdev.h"
#include "record_ctx.h"
#include "scan_cache.h"
#include "hmap.h"
#include "pid_maps_read.h"
#include "launch_interp.h"
#include "uprobe_mgr_priv.h"

void pid_mapping__path(char *buf, size_t len, pid_t pid, const struct pid_mapping *mp,
		       const char *path)
{
	snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)mp->start,
		 (unsigned long long)mp->end);
	if (access(buf, R_OK))
		snprintf(buf, len, "/proc/%d/root%s", pid, path);
}

struct uprobe_obj *uprobe_obj__get(struct uprobe_mgr *m, __u64 dev, __u64 ino, const char *path)
{
	struct uprobe_obj **slot = hmap__get(m->objs, (struct hkey){ dev, ino }, 1);

	if (!slot)
		return NULL;
	if (!*slot) {
		struct uprobe_obj *o = calloc(1, sizeof(*o));

		if (!o || !(o->path = strdup(path))) {
			free(o);
			return NULL;
		}
		o->dev = dev;
		o->ino = ino;
		o->fd = -1;
		*slot = o;
	}
	return *slot;
}

/* Whether OLD (N of them) holds a mapping of O. */
static int maps_have(const struct pid_maps *old, const struct uprobe_obj *o)
{
	for (__u32 i = 0; old && i < old->n; i++)
		if (old->v[i].obj == o)
			return 1;
	return 0;
}

/*
 * A LIBRARY symbol for each family whose functions are in a file PID maps now and did not at
 * its last scan: the reports name the library that did the work (the reference BLAS or
 * OpenBLAS, which libcudart).
 */
static void say_libraries(struct uprobe_mgr *m, pid_t pid, const struct pid_mapping *v, __u32 n)
{
	struct pid_maps **old = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	for (__u32 i = 0; i < n; i++) {
		const struct uprobe_obj *o = v[i].obj;
		__u16 said[MAX_FAMILIES];
		__u32 nsaid = 0;

		if (!o->nsites || maps_have(old ? *old : NULL, o))
			continue;
		for (__u32 j = 0; j < i; j++)
			if (v[j].obj == o)
				goto next; /* a second segment of the same file */
		for (__u32 s = 0; s < o->nsites; s++) {
			__u16 type = o->sites[s].table->rec_type;
			struct bs_symbol r = { .addr = type, .kind = BS_SYM_LIBRARY };
			__u32 k = 0;

			while (k < nsaid && said[k] != type)
				k++;
			if (k < nsaid || nsaid == MAX_FAMILIES)
				continue;
			said[nsaid++] = type;
			r.name_id = record_ctx__intern(m->ctx, o->path);
			if (!r.name_id)
				continue;
			record_ctx__hdr(&r.h, BS_REC_SYMBOL, sizeof(r), pid, pid, 0);
			record_ctx__write(m->ctx, &r);
		}
next:;
	}
}

/*
 * PID had no address space left once V was read: V's mappings join those it had
 * (pid_maps_read.h). A pid reused within an exited process's grace by one that also exits as
 * it is read would keep the earlier one's mappings where V has none, and frames there would
 * be misnamed: far rarer than the short read this is for (a process's start time would tell
 * them apart, at a read of its stat per scan).
 */
static void add_maps(struct uprobe_mgr *m, pid_t pid, struct pid_mapping *v, __u32 n)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot || !(*slot)->n) {
		uprobe_mgr__set_maps(m, pid, v, n); /* nothing better: what the read saw */
		return;
	}
	pid_maps_read__add(&(*slot)->v, &(*slot)->n, v, n);
	free(v);
}

void uprobe_mgr__set_maps(struct uprobe_mgr *m, pid_t pid, struct pid_mapping *v, __u32 n)
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
	(*slot)->exited_ns = 0; /* scanned: alive (a pid reused after an exit) */
}

int uprobe_mgr__scan_pid(struct uprobe_mgr *m, pid_t pid)
{
	char fn[64], line[PATH_MAX + 256], path[PATH_MAX], open_path[PATH_MAX + 64];
	struct pid_mapping *v = NULL;
	size_t cap = 0;
	__u32 n = 0;
	FILE *f;

	if (m->closed)
		return -ESHUTDOWN; /* the recording stops: its probes are gone, none is added */
	/* -a's excluded: never looked at, never a listener's (gil's, the shim's, --inject's). */
	if (m->scoped && m->ctx->opts->system_wide && !uprobe_mgr__in_job(m, pid))
		return -EPERM;
	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int major, minor;
		char perms[8];
		struct pid_mapping mp;
		struct uprobe_obj *o;

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms,
			   &pgoff, &major, &minor, &ino, path) < 7 ||
		    !ino || path[0] != '/')
			continue;
		mp = (struct pid_mapping){ start, end, pgoff, kdev(major, minor), ino, NULL };
		if (perms[2] != 'x')
			continue;
		o = uprobe_obj__get(m, mp.dev, mp.ino, path);
		if (!o)
			continue;
		mp.obj = o;
		if (!o->examined) {
			pid_mapping__path(open_path, sizeof(open_path), pid, &mp, path);
			uprobe_obj__examine(m, o, open_path, pid);
		}
		uprobe_mgr__notify_mapped(m, pid, &mp, path);
		if (array__grow((void **)&v, n, &cap, sizeof(*v)))
			break; /* no memory: the maps read so far are kept */
		v[n++] = mp;
	}
	fclose(f);
	/* A process that exited (a zombie shows no maps) keeps the maps it had: its last
	 * stacks are named after they drain. */
	if (!n) {
		free(v);
		return 0;
	}
	if (m->nfams)
		say_libraries(m, pid, v, n);
	/* One that exited during the read may have shown only its first mappings. */
	if (!pid_maps_read__alive(pid))
		add_maps(m, pid, v, n);
	else
		uprobe_mgr__set_maps(m, pid, v, n);
	/* Its own probes on what it maps (scoped: uprobe_group.c). */
	uprobe_mgr__link_pid(m, pid, 0);
	return 0;
}

struct uprobe_obj *uprobe_mgr__prescan(struct uprobe_mgr *m, const char *path)
{
	struct stat st;
	struct uprobe_obj *o;

	if (m->closed || stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	o = uprobe_obj__get(m, kdev_of(st.st_dev), st.st_ino, path);
	if (o && !o->examined)
		uprobe_obj__examine(m, o, path, getpid());
	return o;
}

static void prescan_path(void *arg, const char *path)
{
	uprobe_mgr__prescan(arg, path);
}

/*
 * Where the families' libraries usually live (struct ucall_table.well_known). With -a nothing
 * can be stopped, so a process started while recording races the scan its exec triggers;
 * probing these files up front (on their inodes: every process mapping them is covered) takes
 * that race away for them.
 */
static void prescan_well_known(struct uprobe_mgr *m)
{
	for (__u32 f = 0; f < m->nfams; f++)
		for (const char *const *w = m->fams[f].table->well_known; w && *w; w++) {
			glob_t g;

			if (glob(*w, GLOB_BRACE | GLOB_NOSORT, NULL, &g))
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
		char interp[PATH_MAX];

		/*
		 * The command's ld.so first: its link-map hook then stops the command at the
		 * libraries it loads whether or not its exec was stopped (bpf_send_signal, from
		 * the exec's tracepoint, can fail while an earlier signal is pending on the CPU).
		 */
		/*
		 * The command is held before its exec: it maps none of its program yet. It gets
		 * every group made until it runs (ld.so's hook first), so that the kernel places
		 * each in the program it execs as soon as its exec maps the file.
		 */
		m->link_all_pid = m->ctx->launch_pid;
		if (m->ctx->opts->cmd &&
		    !launch_interp(m->ctx->opts->cmd[0], interp, sizeof(interp)))
			uprobe_mgr__prescan(m, interp);
		if (m->ctx->launch_pid) {
			uprobe_mgr__scan(m, m->ctx->launch_pid);
			uprobe_mgr__link_pid(m, m->ctx->launch_pid, 1);
		}
		for (__u32 i = 0; i < o->npids; i++)
			uprobe_mgr__scan(m, o->pids[i]);
	}
	for (__u32 k = 0; k < 2 * m->nlisteners; k++) {
		__u32 i = uprobe_mgr__listener_order(m, k);

		if (i < m->nlisteners && m->listeners[i].started)
			m->listeners[i].started(m->listeners[i].arg);
	}
	m->link_all_pid = 0;
	return err;
}

int uprobe_mgr__scan(struct uprobe_mgr *m, pid_t pid)
{
	struct dirent *d;
	DIR *dir;

	if (pid > 0) {
		return uprobe_mgr__scan_pid(m, pid);
	}
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		char *end;
		long p = strtol(d->d_name, &end, 10);

		if (*end || p <= 0 || p == m->ctx->self_pid)
			continue;
		/* -a's excluded: never looked at, never a listener's (the shim's links). */
		if (m->scoped && !uprobe_mgr__in_job(m, p))
			continue;
		uprobe_mgr__scan_pid(m, p); /* processes that exit meanwhile are fine */
	}
	closedir(dir);
	return 0;
}

static const struct pid_mapping *mapping_at(struct uprobe_mgr *m, pid_t pid, __u64 addr)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return NULL;
	for (__u32 i = 0; i < (*slot)->n; i++)
		if (addr >= (*slot)->v[i].start && addr < (*slot)->v[i].end)
			return &(*slot)->v[i];
	return NULL;
}

int uprobe_mgr__code_at(struct uprobe_mgr *m, pid_t pid, __u64 addr, int rescan,
			struct uprobe_code *out)
{
	const struct pid_mapping *mp = mapping_at(m, pid, addr);
	char open_path[PATH_MAX + 64], root[64];
	struct uprobe_obj *o;

	if (!mp && rescan) {
		uprobe_mgr__scan_pid(m, pid); /* a mapping newer than the last scan */
		mp = mapping_at(m, pid, addr);
	}
	if (!mp || !mp->obj)
		return -ENOENT;
	o = mp->obj;
	if (!o->syms && !o->syms_failed) {
		pid_mapping__path(open_path, sizeof(open_path), pid, mp, o->path);
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		if (!uprobe_obj__first_reads(m, o, open_path, root, NULL, &o->syms) && !o->syms)
			/* the process is gone: its path as we saw it */
			uprobe_obj__first_reads(m, o, o->path, NULL, NULL, &o->syms);
		o->syms_failed = !o->syms;
	}
	if (!o->syms || elf_syms__off_to_vaddr(o->syms, addr - mp->start + mp->pgoff, &out->vaddr))
		return -ENOENT;
	out->path = o->path;
	out->syms = o->syms;
	out->start = mp->start;
	out->end = mp->end;
	out->pgoff = mp->pgoff;
	out->dev = mp->dev;
	out->ino = mp->ino;
	return 0;
}

int uprobe_mgr__code_maps(struct uprobe_mgr *m, pid_t pid, int rescan, struct uprobe_code *out,
			  int max)
{
	struct pid_maps **slot;
	int n = 0;

	if (rescan)
		uprobe_mgr__scan_pid(m, pid);
	slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);
	for (__u32 i = 0; slot && *slot && i < (*slot)->n && n < max; i++) {
		const struct pid_mapping *mp = &(*slot)->v[i];

		if (mp->obj)
			out[n++] = (struct uprobe_code){ .path = mp->obj->path,
							 .start = mp->start,
							 .end = mp->end,
							 .pgoff = mp->pgoff,
							 .dev = mp->dev,
							 .ino = mp->ino };
	}
	return n;
}
