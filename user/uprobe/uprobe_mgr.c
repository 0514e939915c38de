// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding and probing API code in traced processes (see uprobe_mgr.h): the manager's
 * lifecycle, its families and --dry-run's list. Its other jobs are in the files that
 * uprobe_mgr_priv.h lists.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include "env.h"
#include "kdev.h"
#include "kernel_features.h"
#include "link_reaper.h"
#include "msg.h"
#include "record_ctx.h"
#include "hmap.h"
#include "uprobe_mgr_priv.h"
#include "uprobe_multi.h"
#include "scan_cache.h"
#include "uprobe_closer.h"
#include "libmap.skel.h"

/* Launch mode with no running process beside CMD (-p, -a). */
static bool launch_only(const struct record_opts *o)
{
	return o->cmd && !o->npids && !o->system_wide;
}

struct uprobe_mgr *uprobe_mgr__new(struct record_ctx *ctx)
{
	struct uprobe_mgr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->ctx = ctx;
	m->objs = hmap__new(sizeof(struct uprobe_obj *));
	m->pids = hmap__new(sizeof(struct pid_maps *));
	m->links = hmap__new(sizeof(struct pid_links));
	m->closer = uprobe_closer__new();
	m->cache = scan_cache__load();
	m->stalled = hmap__new(sizeof(__u8));
	if (!m->objs || !m->pids || !m->links || !m->closer || !m->cache || !m->stalled) {
		uprobe_mgr__free(m);
		return NULL;
	}
	/*
	 * Per-site perf-event uprobes: attach after earlier recordings' teardown, not during,
	 * where processes already run (-p, -a): while attaching crawls behind the teardown's
	 * mutex, their calls would be missed. A launched CMD alone is held until every probe is
	 * attached: it misses nothing, and a few probes need not wait for hundreds to go.
	 */
	if (!uprobe_multi__supported() && !launch_only(ctx->opts))
		link_reaper__wait_others(120 * 1000);
	/*
	 * A probe goes only into the processes the recording traces, by a link of each one's
	 * own, but under -a without --exclude-* (every process is traced: one link on the file)
	 * and on kernels without uprobe_multi links, where a perf-event uprobe per site and
	 * process would cost a grace period each to take out (docs/USAGE.md, "What a recording
	 * touches").
	 */
	m->scoped = uprobe_multi__supported() &&
		    (!ctx->opts->system_wide || record_opts__excludes(ctx->opts));
	return m;
}

/*
 * Where probes are the processes' own, a fork of one: launch mode's is held until the child's
 * own are in (fork_hold_btf) where the kernel can signal the child (bpf_send_signal_task);
 * any other is told at once (fork_told), its first calls made before its links missed.
 */
static int libmap_forks(struct uprobe_mgr *m)
{
	struct libmap_bpf *l = m->libmap;
	int err = 0;

	l->rodata->hold_forks =
		l->rodata->stop_on_new_code && m->scoped && m->ctx->use_btf &&
		kfeature__has(KF_SIGNAL_TASK) &&
		!kfeature__call_kfunc(l->progs.fork_hold_btf, BS_LIBMAP_SIGNAL_TASK_CALL,
				      "bpf_send_signal_task");
	if (!l->rodata->hold_forks)
		err = bpf_program__set_autoload(l->progs.fork_hold_btf, false);
	if (!err && !m->scoped) /* one link on each file: a child has the probes already */
		err = bpf_program__set_autoload(l->progs.fork_told_btf, false)
			      ?: bpf_program__set_autoload(l->progs.fork_told_raw, false);
	return err;
}

/* Load and attach the new-code reporter (bpf/libmap.bpf.c). */
static int libmap_start(struct uprobe_mgr *m)
{
	struct record_ctx *ctx = m->ctx;
	const char *env;
	__u8 one = 1;
	__u32 cmd_pid;
	int err;

	m->libmap = libmap_bpf__open();
	if (!m->libmap)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(m->libmap, ctx, NULL);
	/*
	 * Launch mode owns its command's processes, and only those: they are stopped on new code,
	 * so no first call is missed (a -p target beside CMD, or -a's other processes, never).
	 */
	m->libmap->rodata->stop_on_new_code = ctx->opts->cmd != NULL && ctx->launch_pid > 0;
	env = env__trusted("BPFSIGHT_TEST_NO_EXEC_STOP");
	m->libmap->rodata->skip_exec_stop = env && !strcmp(env, "1");
	if (uprobe_multi__supported())
		uprobe_multi__prepare(m->libmap->progs.dl_debug_state);
	RECORD_CTX_SET_EXCLUDE_RODATA(m->libmap, ctx);
	err = record_ctx__prepare(ctx, m->libmap->obj);
	if (!err)
		err = libmap_forks(m);
	if (!err)
		err = libmap_bpf__load(m->libmap);
	cmd_pid = (__u32)ctx->launch_pid;
	if (!err && m->libmap->rodata->stop_on_new_code &&
	    bpf_map_update_elem(bpf_map__fd(m->libmap->maps.launched), &cmd_pid, &one, BPF_ANY))
		err = -errno;
	if (!err)
		err = libmap_bpf__attach(m->libmap);
	return err;
}

struct uprobe_mgr *uprobe_mgr__open(struct record_ctx *ctx, int *err)
{
	struct uprobe_mgr *m = uprobe_mgr__new(ctx);

	*err = 0;
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = libmap_start(m);
	if (*err) {
		uprobe_mgr__free(m);
		return NULL;
	}
	return m;
}

void uprobe_mgr__close(struct uprobe_mgr *m)
{
	if (!m || m->closed)
		return;
	if (m->late_forks) /* never silent: what their first moments may have missed */
		pr_note("%lu child process%s of the traced ones got %s probes after %s began to run "
			"(at most %.1f ms after %s fork): a call made before is not recorded (a -p "
			"target's children are not held; docs/USAGE.md, \"Limits worth knowing\")\n",
			m->late_forks, m->late_forks == 1 ? "" : "es",
			m->late_forks == 1 ? "its" : "their", m->late_forks == 1 ? "it" : "they",
			(double)m->late_max_ns / 1e6, m->late_forks == 1 ? "its" : "their");
	m->link_all_pid = 0;
	uprobe_mgr__unlink_all(m);
	/* The new-code reporter too: nothing is scanned any more, so nothing need report. */
	libmap_bpf__destroy(m->libmap);
	m->libmap = NULL;
	/* Nobody is told anything from now on: the families detach and free what they gave. */
	for (size_t i = 0; i < m->nlisteners; i++)
		uprobe_mgr__remove_listener(m, (int)i);
	m->closed = 1;
}

int uprobe_mgr__closed(const struct uprobe_mgr *m)
{
	return !m || m->closed;
}

int uprobe_mgr__attach_links(struct uprobe_mgr *m, const char *family, struct uprobe_links *l,
			     const struct bpf_program *prog, const char *path, const __u64 *offs,
			     __u32 cnt, const struct uprobe_multi_opts *o, const char *what,
			     const char *object)
{
	char msg[PATH_MAX + 128];
	struct uprobe_obj *obj;
	struct stat st;
	int err;

	snprintf(msg, sizeof(msg), "%s %s in %s", o->retprobe ? "uretprobe" : "uprobe", what,
		 object);
	if (o->pid > 0) {
		err = uprobe_links__attach(l, prog, path, offs, cnt, o);
		if (err && err != -ESRCH)
			record_ctx__attach_failed(m->ctx, family, msg, err);
		return err;
	}
	/* The job's processes that map the file, each by a link of its own (uprobe_group.c). */
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (m->closed)
		return -ESHUTDOWN;
	if (stat(path, &st)) {
		err = -errno;
		record_ctx__attach_failed(m->ctx, family, msg, err);
		return err;
	}
	obj = uprobe_obj__get(m, kdev_of(st.st_dev), st.st_ino, object);
	if (!obj)
		return -ENOMEM;
	l->group = uprobe_group__new(m, obj, family, prog, path, offs, cnt, o, msg, &err);
	if (l->group)
		l->group->owner = l;
	return err;
}

void uprobe_obj__free(struct uprobe_obj *o)
{
	if (!o)
		return;
	if (o->fd >= 0)
		close(o->fd);
	free(o->sites);
	free(o->heard);
	elf_syms__free(o->syms);
	free(o->path);
	free(o);
}

void uprobe_mgr__free(struct uprobe_mgr *m)
{
	size_t it = 0;
	void *v;

	if (!m)
		return;
	uprobe_mgr__unlink_all(m);
	uprobe_mgr__free_groups(m); /* they point to their files */
	while (m->objs && (v = hmap__next(m->objs, &it, NULL)))
		uprobe_obj__free(*(struct uprobe_obj **)v);
	it = 0;
	while (m->pids && (v = hmap__next(m->pids, &it, NULL))) {
		struct pid_maps *pm = *(struct pid_maps **)v;

		if (pm)
			free(pm->v);
		free(pm);
	}
	hmap__free(m->objs);
	hmap__free(m->stalled);
	hmap__free(m->pids);
	free(m->exited);
	free(m->listeners);
	/* What this recording found is there at the next one's start (a failure costs nothing
	 * but that). */
	scan_cache__save(m->cache);
	scan_cache__free(m->cache);
	libmap_bpf__destroy(m->libmap);
	free(m);
}

int uprobe_mgr__add_family(struct uprobe_mgr *m, const struct ucall_table *table,
			   struct bpf_program *entry, struct bpf_program *ret,
			   struct bpf_program *session)
{
	if (m->nfams == MAX_FAMILIES)
		return -E2BIG;
	m->fams[m->nfams++] = (struct uprobe_fam){ table, entry, ret, session };
	return 0;
}

static int site_cmp(const void *a, const void *b)
{
	const struct uprobe_site *x = a, *y = b;

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
		struct uprobe_obj *o = *(struct uprobe_obj **)v;

		if (!o->nsites)
			continue;
		nobj++;
		qsort(o->sites, o->nsites, sizeof(*o->sites), site_cmp);
		for (__u32 i = 0; i < o->nsites; i++) {
			const struct uprobe_site *s = &o->sites[i];

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
	if (nsites || !m)
		return;
	/* Nothing to list reads as a failure: say what was looked for and where it would be. */
	for (__u32 f = 0; f < m->nfams; f++)
		fprintf(out,
			"%s: none of its %u entry points (%s, ...) is in a file the traced "
			"processes map now\n",
			m->fams[f].table->family, m->fams[f].table->napis,
			m->fams[f].table->napis ? m->fams[f].table->apis[0].name : "");
	fprintf(out, "a library loaded later (import torch, dlopen) is probed when it is loaded, "
		     "in a recording; --dry-run lists only what is mapped now (is this the process "
		     "that loads it?)\n");
}
