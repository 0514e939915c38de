// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The torch family's sources of steps for the per-step reports (steps.h): its TORCH_STEP
 * records (torch_steps.c writes them: from the end of one Optimizer.step#... or ProfilerStep#N
 * scope to the next's), tried first for every process; and, named by --steps=ProfilerStep,
 * the ProfilerStep#N scopes themselves, torch.profiler's steps numbered as it numbers them
 * (the recorder writes TORCH_STEP records for the first process only: a merged file's other
 * ranks, or a second job, have theirs).
 */
#include <stdlib.h>
#include <string.h>
#include "steps.h"
#include "torch.h"

static int torch_step_add(void *st, const struct bs_hdr *rec, const struct trace_model *m,
			  steps_emit_fn emit, void *arg)
{
	const struct bs_torch_step *s = (const void *)rec;

	if (rec->type != BS_REC_TORCH_STEP || rec->size < sizeof(*s))
		return 0;
	return emit(arg, &(struct step_span){ .pid = rec->pid,
					      .tid = rec->tid,
					      .step = s->step,
					      .ts = rec->ts,
					      .end = rec->ts + s->dur,
					      .name_id = s->name_id });
}

/* A ProfilerStep#N scope: the step N. */
static int profiler_step_add(void *st, const struct bs_hdr *rec, const struct trace_model *m,
			     steps_emit_fn emit, void *arg)
{
	const struct bs_torch_op *r = (const void *)rec;
	const char *name, *num;
	char *end;
	__u64 n;

	if (!torch_op__valid(rec) || !(r->flags & BS_TORCH_PROFILER_STEP))
		return 0;
	name = r->name_id ? trace_model__string(m, r->name_id) : NULL;
	num = name ? strchr(name, '#') : NULL;
	if (!num || num[1] < '0' || num[1] > '9')
		return 0;
	n = strtoull(num + 1, &end, 10);
	if (*end)
		return 0;
	return emit(arg, &(struct step_span){ .pid = rec->pid,
					      .tid = rec->tid,
					      .step = n,
					      .ts = rec->ts,
					      .end = rec->ts + r->dur,
					      .name_id = r->name_id });
}

const struct family_steps torch_step_sources[] = {
	{
		.kind = "torch",
		.desc = "torch's training steps (-t torch), from one optimizer step (or "
			"ProfilerStep#N) to the next",
		.flags = STEPS_DEFAULT | STEPS_NUMBERED,
		.add = torch_step_add,
	},
	{
		.kind = "ProfilerStep",
		.desc = "torch.profiler's ProfilerStep#N scopes (-t torch), step N each",
		.flags = STEPS_NUMBERED,
		.add = profiler_step_add,
	},
	{},
};
