// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What a stack says a thread is doing, in the job's words: see stack_call.h. */
#include <stdio.h>
#include <string.h>
#include "family.h"
#include "human.h"
#include "stack_call.h"
#include "stack_format.h"
#include "trace_model.h"

int stack_call__library_file(const char *file)
{
	return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	       strstr(file, "/lib/python3") || strstr(file, "<frozen ");
}

/* T's entry named NAME, as T names it, or NULL. */
static const char *in_table(const struct ucall_table *t, const char *name)
{
	for (__u32 j = 0; t && j < t->napis; j++)
		if (!strcmp(t->apis[j].name, name))
			return t->apis[j].name;
	return NULL;
}

const char *stack_call__api(const struct trace_stack *st, const struct trace_model *m,
			    const struct ucall_table *t)
{
	/* The outermost: ncclBcast calls ncclBroadcast, cudaDeviceSynchronize the driver's. */
	for (int i = st ? st->nframes - 1 : -1; i >= 0; i--) {
		const struct bs_frame *f = &st->frames[i];
		const char *name, *found = NULL;

		if (f->kind != BS_FRAME_NATIVE || !f->func_id ||
		    !(name = trace_model__string(m, f->func_id)))
			continue;
		found = in_table(t, name);
		for_each_family_while(it, !t && !found)
			found = in_table(it.f->api, name);
		if (found)
			return found;
	}
	return NULL;
}

const char *stack_call__in(const struct trace_stack *st, const struct trace_model *m, char *buf,
			   size_t len)
{
	const char *name = stack_call__api(st, m, NULL), *file;

	if (st && st->where) { /* known by what it says (a server's answer) */
		if (st->call)
			snprintf(buf, len, "%s", st->call);
		return st->call ? buf : NULL;
	}
	if (name) {
		snprintf(buf, len, "%s", name);
		return buf;
	}
	/* torch.distributed's collectives (gloo, or NCCL's host side) by their Python frame. */
	for (int i = st ? st->nframes - 1 : -1; i >= 0; i--) {
		const struct bs_frame *f = &st->frames[i];

		if (f->kind != BS_FRAME_PYTHON)
			continue;
		file = stack_frame__file(f, m);
		/* torch 2's collectives are wrapped by c10d_logger.py's `wrapper`: the call is the
		 * frame inside it */
		if (strstr(file, "/torch/distributed/") && !strstr(file, "/c10d_logger.py") &&
		    f->func_id && (name = trace_model__string(m, f->func_id))) {
			snprintf(buf, len, "torch.distributed's %s", name);
			return buf;
		}
	}
	return NULL;
}

const char *stack_call__where(const struct trace_stack *st, const struct trace_model *m, char *buf,
			      size_t len)
{
	const struct bs_frame *f = NULL, *any = NULL;

	if (st && st->where) {
		snprintf(buf, len, "%s", st->where);
		return buf;
	}
	for (__u16 i = 0; st && i < st->nframes && !f; i++) {
		if (st->frames[i].kind != BS_FRAME_PYTHON)
			continue;
		if (!any)
			any = &st->frames[i];
		if (!stack_call__library_file(stack_frame__file(&st->frames[i], m)))
			f = &st->frames[i];
	}
	if (!f)
		f = any;
	for (__u16 i = 0; st && i < st->nframes && !f; i++)
		if (st->frames[i].kind == BS_FRAME_NATIVE && st->frames[i].func_id)
			f = &st->frames[i];
	if (!f) {
		snprintf(buf, len, "code whose stack was not read");
		return buf;
	}
	return stack_call__frame(f, m, buf, len);
}

const char *stack_call__frame(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	const char *file = human__base(stack_frame__file(f, m));
	char fbuf[256];

	if (f->kind == BS_FRAME_PYTHON)
		snprintf(buf, len, "`%s` (%s:%u)", stack_frame__func(f, m, fbuf, sizeof(fbuf)),
			 file, f->line);
	else
		snprintf(buf, len, "`%s` (%s)", stack_frame__func(f, m, fbuf, sizeof(fbuf)), file);
	return buf;
}
