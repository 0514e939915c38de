// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* SYMBOL records of uprobe families, written once per (pid, address, name). */
#include <stdlib.h>
#include <string.h>
#include "native_frames.h"
#include "record_ctx.h"
#include "hmap.h"
#include "ucall_symbols.h"
#include "uprobe_mgr.h"

struct ucall_symbols {
	struct uprobe_mgr *mgr; /* the process's ELF files: host names */
	struct hmap *names;	/* (pid, addr) -> char * (NULL: host lookup failed) */
	struct hmap *pids;	/* (pid, 0) -> __u64: its entries in names (freed at its exit) */
};

struct ucall_symbols *ucall_symbols__new(struct uprobe_mgr *mgr)
{
	struct ucall_symbols *s = calloc(1, sizeof(*s));

	if (s)
		s->mgr = mgr;
	if (s &&
	    (!(s->names = hmap__new(sizeof(char *))) || !(s->pids = hmap__new(sizeof(__u64))))) {
		hmap__free(s->names);
		free(s);
		return NULL;
	}
	return s;
}

void ucall_symbols__free(struct ucall_symbols *s)
{
	size_t it = 0;
	void *v;

	if (!s)
		return;
	while ((v = hmap__next(s->names, &it, NULL)))
		free(*(char **)v);
	hmap__free(s->names);
	hmap__free(s->pids);
	free(s);
}

/* The slot of (PID, ADDR), created when absent (counted for PID's exit). */
static char **slot_new(struct ucall_symbols *s, __u32 pid, __u64 addr)
{
	size_t before = hmap__count(s->names);
	char **slot = hmap__get(s->names, (struct hkey){ pid, addr }, 1);
	__u64 *n;

	if (slot && hmap__count(s->names) > before &&
	    (n = hmap__get(s->pids, (struct hkey){ pid, 0 }, 1)))
		(*n)++;
	return slot;
}

void ucall_symbols__proc_exit(struct ucall_symbols *s, __u32 pid)
{
	__u64 *n = hmap__get(s->pids, (struct hkey){ pid, 0 }, 0);
	struct hkey k, *dead;
	size_t it = 0, i = 0;
	char **v;

	if (!n)
		return;
	/* Keys first: deleting moves values under the iterator. */
	dead = calloc(*n, sizeof(*dead));
	while (dead && i < *n && (v = hmap__next(s->names, &it, &k))) {
		if (k.a != pid)
			continue;
		free(*v);
		*v = NULL;
		dead[i++] = k;
	}
	if (!dead)
		return; /* kept until the recording ends */
	while (i--)
		hmap__del(s->names, dead[i]);
	free(dead);
	hmap__del(s->pids, (struct hkey){ pid, 0 });
}

static void write_symbol(struct record_ctx *ctx, __u32 pid, __u64 addr, const char *name,
			 __u32 kind)
{
	struct bs_symbol r = { .addr = addr, .kind = kind };

	r.name_id = record_ctx__intern(ctx, name);
	if (!r.name_id)
		return;
	record_ctx__hdr(&r.h, BS_REC_SYMBOL, sizeof(r), pid, pid, 0);
	record_ctx__write(ctx, &r);
}

void ucall_symbols__set(struct ucall_symbols *s, struct record_ctx *ctx, __u32 pid, __u64 addr,
			const char *name, __u32 kind)
{
	char **slot = slot_new(s, pid, addr);

	if (!slot || !name || !*name)
		return;
	/* A handle can be freed and its value reused for another function: rename it. */
	if (*slot && !strcmp(*slot, name))
		return;
	free(*slot);
	*slot = strdup(name);
	write_symbol(ctx, pid, addr, name, kind);
}

const char *ucall_symbols__get(struct ucall_symbols *s, __u32 pid, __u64 addr)
{
	char **slot = hmap__get(s->names, (struct hkey){ pid, addr }, 0);

	return slot ? *slot : NULL;
}

const char *ucall_symbols__host(struct ucall_symbols *s, struct record_ctx *ctx, __u32 pid,
				__u64 addr)
{
	char **slot = hmap__get(s->names, (struct hkey){ pid, addr }, 0);
	char *name;

	if (slot)
		return *slot; /* known, or known to be unknown */
	/* Closed (the recording stops, the last records drain): no more reads of processes. */
	name = uprobe_mgr__closed(s->mgr) ? NULL : native_frames__symbolize(s->mgr, pid, addr);
	if (name) {
		ucall_symbols__set(s, ctx, pid, addr, name, BS_SYM_HOST_FUNC);
		free(name);
		return ucall_symbols__get(s, pid, addr);
	}
	slot = slot_new(s, pid, addr);
	if (slot)
		*slot = NULL;
	return NULL;
}
