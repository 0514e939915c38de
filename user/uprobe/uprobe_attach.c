// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's probes (uprobe_mgr_priv.h): an entry and a return probe on every site
 * of a file, as groups (uprobe_group.c: a uprobe_multi link per process of the job, or on the
 * file; one perf-event link per probe before Linux 6.6); the uprobe on ld.so's
 * _dl_debug_state; and detaching them all.
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

/* One group of KIND on N sites of O (OFFS, COOKIES) for family FAM, said as WHAT. */
static void group(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path,
		  const struct uprobe_fam *fam, enum uprobe_kind kind, const __u64 *offs,
		  const __u64 *cookies, __u32 n, const char *what)
{
	struct uprobe_multi_opts opts = { .cookies = cookies,
					  .retprobe = kind == UPROBE_RETURN,
					  .session = kind == UPROBE_SESSION };
	const struct bpf_program *prog[] = { fam->entry, fam->ret, fam->session };
	int err;

	if (n)
		uprobe_group__new(m, o, fam->table->family, prog[kind], path, offs, n, &opts, what,
				  &err);
}

/*
 * Per family on O's sites: one entry and one return group, and one session group for its
 * WRAPPED functions when it has a session program (their return probe fires only when their
 * entry asks for it: bpf/ucall.bpf.h).
 */
static void obj_attach_multi(struct uprobe_mgr *m, struct uprobe_obj *o, const char *path)
{
	static const char *const what_kind[] = { "entry", "return", "session" };
	__u64 *offs = calloc(2 * o->nsites + 1, sizeof(*offs));
	__u64 *cookies = calloc(2 * o->nsites + 1, sizeof(*offs));
	char what[3][PATH_MAX + 128];

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
		for (int k = UPROBE_ENTRY; k <= UPROBE_SESSION; k++)
			snprintf(what[k], sizeof(what[k]), "%u %s %s probes in %s",
				 k == UPROBE_SESSION ? ns : n, fam->table->family, what_kind[k],
				 o->path);
		/* The return probe first: a call whose entry is seen before its return probe
		 * exists leaves a frame no return pops (a running process, -p/-a). */
		group(m, o, path, fam, UPROBE_RETURN, offs, cookies, n, what[UPROBE_RETURN]);
		group(m, o, path, fam, UPROBE_ENTRY, offs, cookies, n, what[UPROBE_ENTRY]);
		group(m, o, path, fam, UPROBE_SESSION, offs + last - ns + 1,
		      cookies + last - ns + 1, ns, what[UPROBE_SESSION]);
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
	/* Perf-event uprobes, a group per site: one that fails takes no other with it. */
	for (__u32 i = 0; i < o->nsites; i++) {
		const struct uprobe_site *s = &o->sites[i];
		const struct uprobe_fam *f = fam_of(m, s->table);
		__u64 cookie = ucall_api__cookie(s->table, s->fn);
		char what[PATH_MAX + 128];

		for (int ret = 1; ret >= 0 && f; ret--) { /* the return probe first, as above */
			snprintf(what, sizeof(what), "%s %s in %s", ret ? "uretprobe" : "uprobe",
				 s->table->apis[s->fn].name, o->path);
			group(m, o, path, f, ret ? UPROBE_RETURN : UPROBE_ENTRY, &s->file_off,
			      &cookie, 1, what);
		}
	}
}

void uprobe_obj__attach_dl_hook(struct uprobe_mgr *m, struct uprobe_obj *o,
				const struct elf_syms *syms, const char *path)
{
	struct uprobe_multi_opts opts = { 0 };
	char what[PATH_MAX + 128];
	struct elf_sym s;
	int err;

	if (!m->libmap || elf_syms__find(syms, "_dl_debug_state", &s))
		return;
	snprintf(what, sizeof(what),
		 "uprobe _dl_debug_state in %s (libraries loaded later will not be found)",
		 o->path);
	/* The recording's own (the always-on family's): what every family's discovery of new
	 * code needs. */
	uprobe_group__new(m, o, family__always()->name, m->libmap->progs.dl_debug_state, path,
			  &s.file_off, 1, &opts, what, &err);
}

/* Append V's N links to *ALL (0), or leave them (-ENOMEM: uprobe_group__free's then). */
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

	for (int ret = 0; ret <= 1; ret++) {
		for (struct uprobe_group *g = m->groups; g; g = g->next) {
			if ((g->kind != UPROBE_ENTRY) != ret)
				continue;
			if (g->all.fd >= 0)
				close(g->all.fd);
			g->all.fd = -1;
			links_take(&all, &n, g->all.links, &g->all.nlinks);
		}
		uprobe_mgr__unlink_pids(m, !ret);
	}
	link_reaper__destroy(all, n);
	free(all);
}
