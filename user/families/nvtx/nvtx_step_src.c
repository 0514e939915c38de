// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family's source of steps for the per-step reports (steps.h), named by
 * --steps=nvtx:NAME in --capture-range=nvtx:NAME's forms (NAME of the default domain,
 * NAME@DOMAIN, NAME@* of any domain): each range of that message a step, numbered 1, 2, ... by
 * start in its process. As torch counts one thread's step scopes, a process's steps are the
 * ranges of the thread that began its first one (by file order); ranges still open when the
 * recording stopped are no steps (their end is not known).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "nvtx.h"
#include "steps.h"

struct nvtx_steps {
	char *name;	    /* the message */
	const char *domain; /* NULL: the default domain; "*": any */
	struct hmap *tid;   /* {pid} -> __u32: the thread whose ranges are its steps */
};

static void nvtx_steps_free(void *vst)
{
	struct nvtx_steps *n = vst;

	if (!n)
		return;
	hmap__free(n->tid);
	free(n->name);
	free(n);
}

static void *nvtx_steps_new(const char *arg)
{
	struct nvtx_steps *n = calloc(1, sizeof(*n));
	char *at;

	if (!n || !(n->name = strdup(arg ? arg : "")) || !(n->tid = hmap__new(sizeof(__u32)))) {
		nvtx_steps_free(n);
		return NULL;
	}
	at = strrchr(n->name, '@');
	if (at && at[1]) {
		*at = 0;
		n->domain = at + 1;
	}
	return n;
}

static int matches(const struct nvtx_steps *n, const struct bs_nvtx_range *r,
		   const struct trace_model *m)
{
	const char *text = r->name_id ? trace_model__string(m, r->name_id) : NULL;
	const char *dom;

	if (!text || strcmp(text, n->name))
		return 0;
	if (!n->domain)
		return !r->domain_id;
	dom = r->domain_id ? trace_model__string(m, r->domain_id) : NULL;
	return !strcmp(n->domain, "*") || (dom && !strcmp(dom, n->domain));
}

static int nvtx_steps_add(void *vst, const struct bs_hdr *rec, const struct trace_model *m,
			  steps_emit_fn emit, void *arg)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	struct nvtx_steps *n = vst;
	__u32 *tid;

	if (rec->type != BS_REC_NVTX_RANGE || rec->size < sizeof(*r) || r->flags & BS_NVTX_OPEN ||
	    !matches(n, r, m))
		return 0;
	tid = hmap__get(n->tid, (struct hkey){ rec->pid }, 1);
	if (!tid)
		return -ENOMEM;
	if (!*tid)
		*tid = rec->tid ? rec->tid : rec->pid;
	if (*tid != (rec->tid ? rec->tid : rec->pid))
		return 0;
	return emit(arg, &(struct step_span){ .pid = rec->pid,
					      .tid = rec->tid,
					      .ts = rec->ts,
					      .end = rec->ts + r->dur,
					      .name_id = r->name_id });
}

const struct family_steps nvtx_step_sources[] = {
	{
		.kind = "nvtx",
		.arg = "NAME",
		.desc = "NVTX ranges whose message is NAME (-t nvtx; NAME@DOMAIN, NAME@* as "
			"--capture-range=nvtx:NAME)",
		.new = nvtx_steps_new,
		.add = nvtx_steps_add,
		.free = nvtx_steps_free,
	},
	{},
};
