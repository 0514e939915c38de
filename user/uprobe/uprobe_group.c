// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Groups of probes placed in the recording's processes only (uprobe_mgr_priv.h says why and
 * how the kernel keeps them there): a link with its pid per process of the job mapping the
 * group's file, made as scans and forks show the mappings, closed as processes exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "array.h"
#include "hmap.h"
#include "record_ctx.h"
#include "uprobe_closer.h"
#include "uprobe_mgr_priv.h"
#include "libmap.skel.h"
#include "msg.h"

int uprobe_mgr__in_job(struct uprobe_mgr *m, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 v;

	if (pid <= 0 || pid == m->ctx->self_pid)
		return 0;
	/* -a with --exclude-*: every process but the excluded ones */
	if (m->ctx->opts->system_wide)
		return m->ctx->excluded_fd < 0 ||
		       bpf_map_lookup_elem(m->ctx->excluded_fd, &key, &v);
	return m->ctx->targets_fd >= 0 && !bpf_map_lookup_elem(m->ctx->targets_fd, &key, &v);
}

static __u64 *dup_u64(const __u64 *v, __u32 n)
{
	__u64 *d;

	if (!v)
		return NULL;
	d = malloc(n * sizeof(*d));
	if (d)
		memcpy(d, v, n * sizeof(*d));
	return d;
}

/* G's link for process PID alone: its fd, or a negative errno (-ESRCH: PID ended). */
static int attach_pid(const struct uprobe_group *g, pid_t pid)
{
	struct uprobe_multi_opts o = { .cookies = g->cookies,
				       .ref_ctr_offsets = g->refs,
				       .pid = pid,
				       .retprobe = g->kind == UPROBE_RETURN,
				       .session = g->kind == UPROBE_SESSION };
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", g->o->fd);
	fd = uprobe_multi__attach_opts(g->prog, path, g->offs, g->cnt, &o);
	if (fd < 0 && uprobe_multi__process_gone(pid))
		return -ESRCH;
	return fd;
}

/* G could not be placed in PID: said once per group, every probe of it counted. */
static void link_failed(struct uprobe_group *g, pid_t pid, int err)
{
	struct record_ctx *ctx = g->m->ctx;
	char what[PATH_MAX + 160];

	if (!g->failed_said++) {
		snprintf(what, sizeof(what), "%s for pid %d", g->what, pid);
		record_ctx__attach_failed(ctx, g->family, what, err);
		record_ctx__lost(ctx, g->family, BS_LOSS_ATTACH, g->cnt - 1);
		return;
	}
	record_ctx__lost(ctx, g->family, BS_LOSS_ATTACH, g->cnt);
}

/* Place G in process PID, unless it is already. */
static void link_one(struct uprobe_mgr *m, struct uprobe_group *g, pid_t pid)
{
	struct pid_links *pl = hmap__get(m->links, (struct hkey){ (__u64)pid, 0 }, 1);
	__u32 key = (__u32)pid;
	__u8 one = 1;
	int fd;

	if (!pl)
		return;
	for (__u32 i = 0; i < pl->n; i++)
		if (pl->v[i].g == g)
			return;
	if (array__grow_from((void **)&pl->v, pl->n, &pl->cap, sizeof(*pl->v), 8))
		return;
	/*
	 * Before the link: a fork or an exec of PID from now on waits for user space (libmap).
	 * Then whether PID is still the job's: an exec into an excluded program either finds it
	 * marked (and waits for its probes to go) or was marked before this looks (-a).
	 */
	if (!pl->n && m->libmap) {
		bpf_map_update_elem(bpf_map__fd(m->libmap->maps.linked), &key, &one, BPF_ANY);
		if (!uprobe_mgr__in_job(m, pid)) {
			bpf_map_delete_elem(bpf_map__fd(m->libmap->maps.linked), &key);
			return;
		}
	}
	fd = attach_pid(g, pid);
	if (fd < 0) {
		if (fd != -ESRCH)
			link_failed(g, pid, fd);
		return;
	}
	pl->v[pl->n].g = g;
	pl->v[pl->n++].fd = fd;
	g->nlinked++;
}

/* Whether process maps PM holds a mapping of O. */
static int maps_hold(const struct pid_maps *pm, const struct uprobe_obj *o)
{
	for (__u32 i = 0; pm && i < pm->n; i++)
		if (pm->v[i].obj == o)
			return 1;
	return 0;
}

void uprobe_mgr__link_pid(struct uprobe_mgr *m, pid_t pid, int all)
{
	struct pid_maps **pm;

	if (!m->scoped || m->closed || !m->groups || !uprobe_mgr__in_job(m, pid))
		return;
	/* A short process (-a's churn) is often gone by the time its fork's record is read. */
	if (uprobe_multi__process_gone(pid))
		return;
	pm = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);
	/* In the order they were made: a family's return probes before its entries. */
	for (struct uprobe_group *g = m->groups; g; g = g->next)
		if (all || maps_hold(pm ? *pm : NULL, g->o))
			link_one(m, g, pid);
	/* -v: a file's probes are live once in a process (a test's cue, as unscoped). */
	for (__u32 i = 0; pm && *pm && i < (*pm)->n; i++) {
		struct uprobe_obj *o = (*pm)->v[i].obj;

		if (o && o->say_probed) {
			o->say_probed = 0;
			pr_info("probed %u sites in %s (pid %d)\n", o->nsites, o->path, pid);
		}
	}
}

void uprobe_mgr__unlink_pid(struct uprobe_mgr *m, pid_t pid, int now)
{
	struct hkey k = { (__u64)pid, 0 };
	struct pid_links *pl = m->links ? hmap__get(m->links, k, 0) : NULL;
	__u32 key = (__u32)pid;

	if (!pl)
		return;
	for (__u32 i = 0; i < pl->n; i++) {
		pl->v[i].g->nlinked--;
		if (now)
			close(pl->v[i].fd);
		else
			uprobe_closer__close(m->closer, pl->v[i].fd);
	}
	free(pl->v);
	hmap__del(m->links, k);
	if (m->libmap)
		bpf_map_delete_elem(bpf_map__fd(m->libmap->maps.linked), &key);
}

void uprobe_mgr__sweep_links(struct uprobe_mgr *m)
{
	pid_t *gone = NULL;
	size_t n = 0, cap = 0, it = 0;
	struct hkey k;

	/* An exit record lost to a full ring would leave the links of a process that ended. */
	while (m->links && hmap__next(m->links, &it, &k))
		if (uprobe_multi__process_gone((pid_t)k.a) &&
		    !array__grow((void **)&gone, n, &cap, sizeof(*gone)))
			gone[n++] = (pid_t)k.a;
	for (size_t i = 0; i < n; i++)
		uprobe_mgr__unlink_pid(m, gone[i], 0);
	free(gone);
}

/* Close the links of kind ENTRY (or the others) in every process, G's alone when G. */
static void close_links(struct uprobe_mgr *m, const struct uprobe_group *g, int entries)
{
	struct pid_links *pl;
	size_t it = 0;

	while (m->links && (pl = hmap__next(m->links, &it, NULL))) {
		__u32 kept = 0;

		for (__u32 i = 0; i < pl->n; i++) {
			struct uprobe_group *lg = pl->v[i].g;

			if ((g && lg != g) || (!g && (lg->kind == UPROBE_ENTRY) != entries)) {
				pl->v[kept++] = pl->v[i];
				continue;
			}
			lg->nlinked--;
			uprobe_closer__close(m->closer, pl->v[i].fd);
		}
		pl->n = kept; /* a process with none left keeps its (empty) slot until it exits */
	}
}

struct uprobe_group *uprobe_group__new(struct uprobe_mgr *m, struct uprobe_obj *o,
				       const char *family, const struct bpf_program *prog,
				       const char *path, const __u64 *offs, __u32 cnt,
				       const struct uprobe_multi_opts *opts, const char *what,
				       int *err)
{
	struct uprobe_group *g = calloc(1, sizeof(*g)), **tail;
	struct hkey k;
	size_t it = 0;
	void *v;

	*err = -ENOMEM;
	if (!g)
		return NULL;
	g->m = m;
	g->o = o;
	g->prog = prog;
	g->cnt = cnt;
	g->kind = opts->session ? UPROBE_SESSION : opts->retprobe ? UPROBE_RETURN : UPROBE_ENTRY;
	g->all.fd = -1;
	g->offs = dup_u64(offs, cnt);
	g->cookies = dup_u64(opts->cookies, cnt);
	g->refs = dup_u64(opts->ref_ctr_offsets, cnt);
	g->family = strdup(family);
	g->what = strdup(what);
	if (!cnt || !g->offs || (opts->cookies && !g->cookies) ||
	    (opts->ref_ctr_offsets && !g->refs) || !g->family || !g->what) {
		*err = cnt ? -ENOMEM : -EINVAL;
		uprobe_group__free(g);
		return NULL;
	}
	if (!m->scoped) {
		struct uprobe_multi_opts all = *opts;

		all.pid = 0;
		*err = uprobe_links__attach(&g->all, prog, path, offs, cnt, &all);
		if (*err) {
			record_ctx__attach_failed(m->ctx, family, what, *err);
			/* Counted per probe, as loss records say. */
			record_ctx__lost(m->ctx, family, BS_LOSS_ATTACH, cnt - 1);
			uprobe_group__free(g);
			return NULL;
		}
	} else if (o->fd < 0 && (o->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		*err = -errno;
		record_ctx__attach_failed(m->ctx, family, what, *err);
		record_ctx__lost(m->ctx, family, BS_LOSS_ATTACH, cnt - 1);
		uprobe_group__free(g);
		return NULL;
	}
	for (tail = &m->groups; *tail; tail = &(*tail)->next)
		;
	*tail = g;
	*err = 0;
	if (!m->scoped || m->closed)
		return g;
	/* Every process of the job that maps the file now (the others: when they do). */
	while ((v = hmap__next(m->pids, &it, &k))) {
		const struct pid_maps *pm = *(struct pid_maps **)v;

		if (pm && !pm->exited_ns && maps_hold(pm, o) && uprobe_mgr__in_job(m, (pid_t)k.a))
			link_one(m, g, (pid_t)k.a);
	}
	/* The launched command before its exec maps none of it yet: it gets every group. */
	if (m->link_all_pid)
		link_one(m, g, m->link_all_pid);
	return g;
}

void uprobe_group__free(struct uprobe_group *g)
{
	struct uprobe_group **pp;

	if (!g)
		return;
	uprobe_links__detach(&g->all);
	if (g->owner)
		g->owner->group = NULL;
	if (g->nlinked)
		close_links(g->m, g, 0);
	for (pp = &g->m->groups; *pp; pp = &(*pp)->next)
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	free(g->offs);
	free(g->cookies);
	free(g->refs);
	free(g->family);
	free(g->what);
	free(g);
}

void uprobe_mgr__unlink_pids(struct uprobe_mgr *m, int entries)
{
	close_links(m, NULL, entries);
	uprobe_closer__drain(m->closer);
}

void uprobe_mgr__free_groups(struct uprobe_mgr *m)
{
	struct pid_links *pl;
	size_t it = 0;

	while (m->groups) {
		/* Its owner, if any, is gone (families and services detach first): never written. */
		m->groups->owner = NULL;
		uprobe_group__free(m->groups);
	}
	while (m->links && (pl = hmap__next(m->links, &it, NULL)))
		free(pl->v);
	hmap__free(m->links);
	m->links = NULL;
	uprobe_closer__free(m->closer);
	m->closer = NULL;
}

/* Here, with the groups: uprobe_multi.c stays free of the manager (bench/floor builds it alone). */
void uprobe_links__detach(struct uprobe_links *l)
{
	uprobe_group__free(l->group);
	uprobe_links__close(l);
}
