// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nvtx family, what it tells the cupti-shim channel (struct family_shim, shim_family.h): its
 * records in the shim's batches, and what it does with them as they are unpacked:
 *   - --capture-range=nvtx:NAME[@DOMAIN]: a matching range opens the recording's gate when it
 *     begins (BEGIN records, sent at once in sync mode: the sync site) and closes it when the
 *     same range (thread and start) ends;
 *   - names given to threads and categories: one the shim sends again (a tracer joined its
 *     session) is not written twice, so the first recorder's file stays exact.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "capture_gate.h"
#include "hmap.h"
#include "nvtx.h"
#include "record_ctx.h"
#include "shim_family.h"
#include "shim_unpack.h"

#define MAX_OPEN 256 /* capture ranges open at once */
/*
 * Thread and category keys named per process: each costs the recorder memory as long as the
 * process lives, and a process names as many as it likes (682k keys took 338 MB).
 */
#define MAX_NAME_KEYS 65536

struct open_range {
	__u32 pid, tid;
	__u64 ts;
};

struct nvtx_unpack {
	struct shim_unpack *u;
	struct capture_gate *gate; /* --capture-range=nvtx: the recording's gate, else NULL */
	char *cap_name;
	const char *cap_domain; /* NULL = the default domain, "*" = any */
	struct open_range open[MAX_OPEN];
	__u32 nopen;
	/* (pid, 0) -> struct hmap *: (key, kind << 32 | domain) -> the file's id of its name */
	struct hmap *names;
};

static void *nvtx_unpack_new(struct shim_unpack *u)
{
	struct nvtx_unpack *n = calloc(1, sizeof(*n));
	struct record_ctx *ctx = shim_unpack__ctx(u);
	const char *cap = ctx->opts->capture_arg;

	if (!n || !(n->names = hmap__new(sizeof(struct hmap *))))
		goto fail;
	n->u = u;
	if (record_opts__captures(ctx->opts, &family_nvtx) && cap && ctx->gate) {
		char *at;

		n->gate = ctx->gate;
		n->cap_name = strdup(cap);
		if (!n->cap_name)
			goto fail;
		/* nsys's forms: NAME (default domain), NAME@DOMAIN, NAME@* (any domain). */
		at = strrchr(n->cap_name, '@');
		if (at && at[1]) {
			*at = 0;
			n->cap_domain = at + 1;
		}
	}
	return n;
fail:
	if (n)
		hmap__free(n->names);
	free(n);
	return NULL;
}

static void names_free(struct nvtx_unpack *n, __u32 pid)
{
	struct hmap **m = hmap__get(n->names, (struct hkey){ pid, 0 }, 0);

	if (!m)
		return;
	hmap__free(*m);
	hmap__del(n->names, (struct hkey){ pid, 0 });
}

static void nvtx_unpack_free(void *st)
{
	struct nvtx_unpack *n = st;
	struct hmap **m;
	size_t it = 0;

	if (!n)
		return;
	while ((m = hmap__next(n->names, &it, NULL)))
		hmap__free(*m);
	hmap__free(n->names);
	free(n->cap_name);
	free(n);
}

/* The range's message and domain (as the shim sent them) are --capture-range's. */
static int cap_match(const struct nvtx_unpack *n, const char *name, const char *dom, __u32 dom_id)
{
	if (!name || strcmp(name, n->cap_name))
		return 0;
	if (!n->cap_domain)
		return !dom_id;
	return !strcmp(n->cap_domain, "*") || (dom && !strcmp(dom, n->cap_domain));
}

static void cap_begin(struct nvtx_unpack *n, const struct bs_nvtx_begin *b,
		      const char *const texts[])
{
	if (!n->gate || !cap_match(n, texts[0], texts[1], b->domain_id))
		return;
	if (n->nopen == MAX_OPEN)
		return; /* bounded; the gate stays open through the ranges already open */
	n->open[n->nopen++] = (struct open_range){ b->h.pid, b->h.tid, b->h.ts };
	capture_gate__open(n->gate, b->h.ts);
}

static void cap_end(struct nvtx_unpack *n, const struct bs_nvtx_range *r)
{
	for (__u32 i = 0; n->gate && i < n->nopen; i++) {
		if (n->open[i].pid != r->h.pid || n->open[i].tid != r->h.tid ||
		    n->open[i].ts != r->h.ts)
			continue;
		n->open[i] = n->open[--n->nopen];
		capture_gate__close(n->gate, r->h.ts + r->dur);
		return;
	}
}

struct heard {
	__u32 name_id, heard;
};

/*
 * Whether NM (ids translated) is not to be written: it names what its process's last name of
 * its kind and key did, or its key is one past the MAX_NAME_KEYS its process has (counted
 * lost: never silent).
 */
static int name_repeat(struct nvtx_unpack *n, const struct bs_nvtx_name *nm)
{
	struct hmap **m = hmap__get(n->names, (struct hkey){ nm->h.pid, 0 }, 1);
	struct hkey k = { nm->key, (__u64)nm->kind << 32 | nm->domain_id };
	struct heard *h;

	if (m && !*m)
		*m = hmap__new(sizeof(struct heard));
	h = m && *m ? hmap__get(*m, k, 0) : NULL;
	if (!h && m && *m && hmap__count(*m) >= MAX_NAME_KEYS) {
		record_ctx__lost(shim_unpack__ctx(n->u), family_nvtx.name, BS_LOSS_NVTX_NAMES, 1);
		return 1;
	}
	if (!h && m && *m)
		h = hmap__get(*m, k, 1);
	if (h && h->heard && h->name_id == nm->name_id)
		return 1;
	if (h)
		*h = (struct heard){ nm->name_id, 1 };
	return 0;
}

static int nvtx_unpack_record(void *st, struct bs_hdr *rec, const char *const texts[])
{
	struct nvtx_unpack *n = st;
	struct bs_nvtx_name *nm = (void *)rec;

	switch (rec->type) {
	case BS_REC_NVTX_BEGIN:
		cap_begin(n, (const void *)rec, texts);
		return 0;
	case BS_REC_NVTX_RANGE:
		cap_end(n, (const void *)rec);
		return 0;
	case BS_REC_NVTX_NAME:
		/* A thread's name: keyed by its id as its process knows it (a pid namespace's). */
		if (nm->kind == BS_NVTX_NAME_THREAD && nm->key <= 0xffffffffull)
			nm->key = shim_unpack__host_tid(n->u, rec->pid, (__u32)nm->key);
		return name_repeat(n, nm); /* 1: taken, and not written */
	}
	return 0;
}

static void nvtx_unpack_proc_exit(void *st, __u32 pid)
{
	names_free(st, pid);
}

static int sync_wanted(const struct record_opts *o)
{
	return record_opts__captures(o, &family_nvtx);
}

/* sync: BEGIN records sent as ranges begin, for --capture-range=nvtx. */
static const struct shim_site nvtx_sites[] = { { "nvtx" }, { "sync", sync_wanted }, { 0 } };

#define NAME_AND_DOMAIN(T) .strings = { offsetof(struct T, name_id), offsetof(struct T, domain_id) }

static const struct shim_rec nvtx_recs[] = {
	{ BS_REC_NVTX_RANGE, sizeof(struct bs_nvtx_range), NAME_AND_DOMAIN(bs_nvtx_range),
	  .tids = { offsetof(struct bs_nvtx_range, end_tid) } },
	{ BS_REC_NVTX_MARK, sizeof(struct bs_nvtx_mark), NAME_AND_DOMAIN(bs_nvtx_mark) },
	{ BS_REC_NVTX_NAME, sizeof(struct bs_nvtx_name), NAME_AND_DOMAIN(bs_nvtx_name) },
	{ BS_REC_NVTX_BEGIN, sizeof(struct bs_nvtx_begin), NAME_AND_DOMAIN(bs_nvtx_begin) },
	{ 0 },
};

static const struct shim_name nvtx_states[] = {
	{ BS_SHIM_ST_NVTX_INJECTED, "nvtx_injected" },
	{ BS_SHIM_ST_NVTX_ON, "nvtx_on" },
	{ BS_SHIM_ST_SYNC, "sync" },
	{ BS_SHIM_ST_NVTX_CHAINED, "nvtx_chained" },
	{ 0 },
};

static const struct shim_count nvtx_counts[] = {
	{ "nvtx_ranges", "NVTX Ranges" },
	{ "open_ranges", "Open Ranges" },
	{ "nvtx_marks", "NVTX Marks" },
	{ 0 },
};

static int nvtx_count_of(const struct bs_hdr *rec)
{
	if (rec->type == BS_REC_NVTX_RANGE)
		return ((const struct bs_nvtx_range *)rec)->flags & BS_NVTX_OPEN ? 1 : 0;
	return rec->type == BS_REC_NVTX_MARK ? 2 : -1;
}

const struct family_shim nvtx_shim = {
	.sites = nvtx_sites,
	.recs = nvtx_recs,
	.states = nvtx_states,
	.counts = nvtx_counts,
	.count_of = nvtx_count_of,
	.hint = { "NVTX_INJECTION64_PATH", "NVTX ranges (-t nvtx)", "" },
	.env = "NVTX_INJECTION64_PATH",
	.env_kept = " (to keep both, set NVTX_INJECTION64_PATH to the cupti-shim and "
		    "BPFSIGHT_NVTX_CHAIN to the other library)",
	.inject_note = "NVTX follows only partly in a process the shim is injected into: a "
		       "library's NVTX is taken if it has a symbol table, from the injection on "
		       "(PyTorch's and CUDA's, stripped, are not); for NVTX from everything, start "
		       "the job with `bpfsight shim --print-env` (docs/NVTX.md)",
	.new = nvtx_unpack_new,
	.free = nvtx_unpack_free,
	.record = nvtx_unpack_record,
	.proc_exit = nvtx_unpack_proc_exit,
};
