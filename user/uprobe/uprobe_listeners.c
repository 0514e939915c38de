// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The uprobe manager's listeners (uprobe_mgr.h, struct uprobe_listener): the users of its
 * discovery that probe something else than API functions, told what each scan finds.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "array.h"
#include "uprobe_mgr_priv.h"

int uprobe_mgr__add_listener(struct uprobe_mgr *m, const struct uprobe_listener *l)
{
	if (array__grow((void **)&m->listeners, m->nlisteners, &m->listeners_cap,
			sizeof(*m->listeners)))
		return -ENOMEM;
	m->listeners[m->nlisteners] = *l;
	return (int)m->nlisteners++;
}

__u32 uprobe_mgr__listener_order(const struct uprobe_mgr *m, __u32 k)
{
	__u32 i;

	if (!m->nlisteners || k >= 2 * m->nlisteners)
		return UINT32_MAX;
	i = k % m->nlisteners;
	/* The first pass tells the listeners that asked to be first, the second the others. */
	return !!m->listeners[i].first == (k < m->nlisteners) ? i : UINT32_MAX;
}

void uprobe_mgr__remove_listener(struct uprobe_mgr *m, int listener)
{
	if (m && listener >= 0 && (size_t)listener < m->nlisteners)
		memset(&m->listeners[listener], 0, sizeof(m->listeners[listener]));
}

void *uprobe_mgr__examine(struct uprobe_mgr *m, int listener, const char *path)
{
	struct uprobe_obj *o = uprobe_mgr__prescan(m, path);

	return o && listener >= 0 && (__u32)listener < o->nheard ? o->heard[listener] : NULL;
}

/*
 * The load bias of code mapping MP: the file offsets it maps are those of one executable
 * segment, whose addresses are its file offsets plus (vaddr - off).
 */
static __u64 mapping_bias(const struct pid_mapping *mp)
{
	const struct uprobe_obj *o = mp->obj;

	for (__u32 i = 0; i < o->ncode; i++)
		if (o->code[i].off < mp->pgoff + (mp->end - mp->start) &&
		    o->code[i].off + o->code[i].filesz > mp->pgoff)
			return mp->start - mp->pgoff - (o->code[i].vaddr - o->code[i].off);
	return mp->start - mp->pgoff; /* no such segment: as if vaddr == offset */
}

void uprobe_mgr__notify_mapped(struct uprobe_mgr *m, pid_t pid, const struct pid_mapping *mp,
			       const char *shown)
{
	char open_path[PATH_MAX + 64];
	struct uprobe_mapping um;
	int have_path = 0;

	for (__u32 k = 0; mp->obj && k < 2 * m->nlisteners; k++) {
		__u32 i = uprobe_mgr__listener_order(m, k);

		if (i >= mp->obj->nheard || !mp->obj->heard[i] || !m->listeners[i].mapped)
			continue;
		if (!have_path++) {
			pid_mapping__path(open_path, sizeof(open_path), pid, mp, mp->obj->path);
			um = (struct uprobe_mapping){ mp->start, mp->end, mp->pgoff,
						      mapping_bias(mp), shown };
		}
		m->listeners[i].mapped(m->listeners[i].arg, mp->obj->heard[i], pid, open_path, &um);
	}
}
