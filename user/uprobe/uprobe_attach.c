// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's probes (uprobe_mgr_priv.h): an entry and a return probe on every site
 * of a file, for every process, as uprobe_multi links (Linux 6.6+) or one perf-event link
 * per probe; the uprobe on ld.so's _dl_debug_state; and detaching them all.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "link_reaper.h"
#include "record_ctx.h"
#include "hmap.h"
#include "uprobe_mgr_priv.h"
#include "uprobe_broker.h"
#include "uprobe_multi.h"
#include "libmap.skel.h"

static int link_add(struct uprobe_obj *o, struct bpf_link *l, int ret)
{
	struct bpf_link ***v = ret ? &o->ret_links : &o->links;
	__u32 *n = ret ? &o->nret_links : &o->nlinks;
	struct bpf_link **nl = realloc(*v, (*n + 1) * sizeof(*nl));

	if (!nl)
		return -ENOMEM;
	*v = nl;
	nl[(*n)++] = l;
	return 0;
}

static int fd_add(struct uprobe_obj *o, int fd, int ret)
{
	int **v = ret ? &o->ret_fds : &o->fds;
	__u32 *n = ret ? &o->nret_fds : &o->nfds;
	int *nf = realloc(*v, (*n + 1) * sizeof(*nf));

	if (!nf)
		return -ENOMEM;
	*v = nf;
	nf[(*n)++] = fd;
	return 0;
}

enum probe_kind { PROBE_ENTRY, PROBE_RETURN, PROBE_SESSION };

/* One uprobe_multi link of KIND on N sites of O; a session's fd goes with the return ones,
 * detached last (uprobe_mgr__unlink_all). */
static void link_multi(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path,
		       const struct uprobe_fam *fam, enum probe_kind kind, const __u64 *offs,
		       const __u64 *cookies, __u32 n)
{
	static const char *const what_kind[] = { "entry", "return", "session" };
	struct uprobe_multi_opts opts = { .cookies = cookies,
					  .retprobe = kind == PROBE_RETURN,
					  .session = kind == PROBE_SESSION };
	const struct bpf_program *prog[] = { fam->entry, fam->ret, fam->session };
	char what[PATH_MAX + 128];
	int fd;

	if (!n)
		return;
	fd = uprobe_multi__attach_opts(prog[kind], path, offs, n, &opts);
	if (fd >= 0 && !fd_add(o, fd, kind != PROBE_ENTRY))
		return;
	if (fd >= 0)
		close(fd);
	snprintf(what, sizeof(what), "%u %s %s probes in %s", n, fam->table->family,
		 what_kind[kind], o->path);
	record_ctx__attach_failed(m->ctx, fam->table->family, what, fd < 0 ? fd : -ENOMEM);
	/* Counted per probe, as loss records say. */
	record_ctx__lost(m->ctx, fam->table->family, BS_LOSS_ATTACH, n - 1);
}

/*
 * Per family on O's sites: one entry and one return uprobe_multi link, and one session link
 * for its WRAPPED functions when it has a session program (their return probe fires only
 * when their entry asks for it: bpf/ucall.bpf.h).
 */
static void obj_attach_multi(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path)
{
	__u64 *offs = calloc(2 * o->nsites + 1, sizeof(*offs));
	__u64 *cookies = calloc(2 * o->nsites + 1, sizeof(*offs));

	for (__u32 f = 0; f < m->nfams && offs && cookies; f++) {
		const struct uprobe_fam *fam = &m->fams[f];
		/* Sites with the pair from the front of the arrays, session sites from the back. */
		__u32 n = 0, ns = 0, last = 2 * o->nsites;

		for (__u32 i = 0; i < o->nsites; i++) {
			__u64 c;

			if (o->sites[i].table != fam->table)
				continue;
			c = ucall_api__cookie(fam->table, o->sites[i].fn);
			if (fam->session && (c & BS_UCOOKIE_WRAPPED)) {
				offs[last - ns] = o->sites[i].file_off;
				cookies[last - ns++] = c;
				continue;
			}
			offs[n] = o->sites[i].file_off;
			cookies[n++] = c;
		}
		/* The return probe first: a call whose entry is seen before its return probe
		 * exists leaves a frame no return pops (a running process, -p/-a). */
		link_multi(m, o, path, fam, PROBE_RETURN, offs, cookies, n);
		link_multi(m, o, path, fam, PROBE_ENTRY, offs, cookies, n);
		link_multi(m, o, path, fam, PROBE_SESSION, offs + last - ns + 1,
			   cookies + last - ns + 1, ns);
	}
	free(offs);
	free(cookies);
}

static const struct uprobe_fam *fam_of(const struct uprobe_mgr *m, const struct ucall_table *t)
{
	for (__u32 i = 0; i < m->nfams; i++)
		if (m->fams[i].table == t)
			return &m->fams[i];
	return NULL;
}

void uprobe_obj__attach(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path)
{
	if (uprobe_multi__supported()) {
		obj_attach_multi(m, o, path);
		return;
	}
	for (__u32 i = 0; i < o->nsites; i++) {
		const struct uprobe_site *s = &o->sites[i];
		const struct uprobe_fam *f = fam_of(m, s->table);
		LIBBPF_OPTS(bpf_uprobe_opts, opts,
			    .bpf_cookie = ucall_api__cookie(s->table, s->fn));
		struct bpf_link *l;
		char what[PATH_MAX + 128];

		for (int ret = 1; ret >= 0 && f; ret--) { /* the return probe first, as above */
			opts.retprobe = ret;
			l = uprobe_broker__attach(ret ? f->ret : f->entry, -1, path, s->file_off,
						  &opts);
			if (!l || link_add(o, l, ret)) {
				int err = l ? -ENOMEM : -errno;

				bpf_link__destroy(l);
				snprintf(what, sizeof(what), "%s %s in %s",
					 ret ? "uretprobe" : "uprobe", s->table->apis[s->fn].name,
					 o->path);
				record_ctx__attach_failed(m->ctx, f->table->family, what, err);
			}
		}
	}
}

void uprobe_obj__attach_dl_hook(struct uprobe_mgr *m, struct uprobe_obj *o,
				const struct elf_syms *syms, const char *path)
{
	struct bpf_link *l;
	struct elf_sym s;
	char what[PATH_MAX + 128];
	int err;

	if (!m->libmap || elf_syms__find(syms, "_dl_debug_state", &s))
		return;
	if (uprobe_multi__supported()) {
		int fd = uprobe_multi__attach(m->libmap->progs.dl_debug_state, path, &s.file_off,
					      NULL, 1, 0);

		if (fd >= 0 && !fd_add(o, fd, 0))
			return;
		if (fd >= 0)
			close(fd);
		err = fd < 0 ? fd : -ENOMEM;
	} else {
		l = uprobe_broker__attach(m->libmap->progs.dl_debug_state, -1, path, s.file_off,
					  NULL);
		if (l && !link_add(o, l, 0))
			return;
		err = l ? -ENOMEM : -errno;
		bpf_link__destroy(l);
	}
	snprintf(what, sizeof(what),
		 "uprobe _dl_debug_state in %s (libraries loaded later will not be found)",
		 o->path);
	/* The recording's own (the always-on family's): what every family's discovery of new code needs. */
	record_ctx__attach_failed(m->ctx, family__always()->name, what, err);
}

/* Append V's N links to *ALL (0), or leave them (-ENOMEM: uprobe_obj__free's then). */
static int links_take(struct bpf_link ***all, unsigned int *n, struct bpf_link **v, __u32 *nv)
{
	struct bpf_link **grown;

	if (!*nv)
		return 0;
	grown = realloc(*all, (*n + *nv) * sizeof(**all));
	if (!grown)
		return -ENOMEM;
	*all = grown;
	memcpy(grown + *n, v, *nv * sizeof(*v));
	*n += *nv;
	*nv = 0;
	return 0;
}

/*
 * Every entry probe of every file first, then the return probes. A call whose entry is seen
 * once its return probe is gone leaves a frame nothing pops: a thread looping on calls piles
 * such frames up at one stack address (bpf/ucall.bpf.h keeps them, as a tail call's), its
 * calls overflow the depth and count as lost, thousands in the last moments of a -p/-a
 * recording. In this order a call in flight keeps its return probe until no entry is left.
 * The perf-event uprobes of kernels before 6.6 go together, in the background, in the same
 * order (link_reaper.h).
 */
void uprobe_mgr__unlink_all(struct uprobe_mgr *m)
{
	struct bpf_link **all = NULL;
	unsigned int n = 0;
	size_t it;
	void *v;

	for (int ret = 0; ret <= 1; ret++) {
		it = 0;
		while (m->objs && (v = hmap__next(m->objs, &it, NULL))) {
			struct uprobe_obj *o = *(struct uprobe_obj **)v;

			if (!o)
				continue;
			for (__u32 i = 0; i < (ret ? o->nret_fds : o->nfds); i++)
				close(ret ? o->ret_fds[i] : o->fds[i]);
			*(ret ? &o->nret_fds : &o->nfds) = 0;
			if (ret)
				links_take(&all, &n, o->ret_links, &o->nret_links);
			else
				links_take(&all, &n, o->links, &o->nlinks);
		}
	}
	link_reaper__destroy(all, n);
	free(all);
}
