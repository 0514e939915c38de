// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of the torch family: an op, as docs/TORCH.md describes it for dump. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "torch.h"

static const char *const scopes[BS_TORCH_SCOPES] = {
	[BS_TORCH_SCOPE_FUNCTION] = "function",
	[BS_TORCH_SCOPE_BACKWARD_FUNCTION] = "backward_function",
	[BS_TORCH_SCOPE_TORCHSCRIPT_FUNCTION] = "torchscript_function",
	[BS_TORCH_SCOPE_KERNEL_FUNCTION_DTYPE] = "kernel_function_dtype",
	[BS_TORCH_SCOPE_CUSTOM_CLASS] = "custom_class",
	[BS_TORCH_SCOPE_BUILD_FEATURE] = "build_feature",
	[BS_TORCH_SCOPE_LITE_INTERPRETER] = "lite_interpreter",
	[BS_TORCH_SCOPE_USER_SCOPE] = "user_scope",
	[BS_TORCH_SCOPE_STATIC_RUNTIME_OP] = "static_runtime_op",
	[BS_TORCH_SCOPE_STATIC_RUNTIME_MODEL] = "static_runtime_model",
};

const char *torch_scope_name(__u8 scope)
{
	return scope < BS_TORCH_SCOPES ? scopes[scope] : "unknown";
}

int torch_op__valid(const struct bs_hdr *rec)
{
	return rec->type == BS_REC_TORCH_OP && rec->size >= sizeof(struct bs_torch_op);
}

static int decode_op(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_torch_op *r = (const void *)rec;
	const char *name = r->name_id ? trace_model__string(m, r->name_id) : NULL;
	const char *shapes = r->shapes_id ? trace_model__string(m, r->shapes_id) : NULL;
	const char *concrete = r->concrete_id ? trace_model__string(m, r->concrete_id) : NULL;

	ev->name = name ? name : "";
	ev->dur = r->dur;
	event__arg_str(ev, "scope", torch_scope_name(r->scope));
	/* A forward thread pairs only what has a sequence number (torch.profiler's rule). */
	if (r->seq >= 0) {
		event__arg_s64(ev, "seq", r->seq);
		event__arg_u64(ev, "fwd_thread", r->fwd_tid);
	}
	event__arg_u64(ev, "torch_thread", r->torch_tid);
	event__arg_u64(ev, "depth", r->depth);
	if (shapes)
		event__arg_str(ev, "shapes", shapes);
	if (concrete)
		event__arg_str(ev, "concrete", concrete);
	if (r->flags & (BS_TORCH_STEP | BS_TORCH_PROFILER_STEP))
		event__arg_bool(ev, "step", 1);
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=torch */
	return 1;
}

static int decode_step(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_torch_step *s = (const void *)rec;
	const char *scope = s->name_id ? trace_model__string(m, s->name_id) : NULL;

	snprintf(ev->namebuf, sizeof(ev->namebuf), "step %llu", (unsigned long long)s->step);
	ev->name = ev->namebuf;
	ev->dur = s->dur;
	event__arg_u64(ev, "step", s->step);
	event__arg_str(ev, "scope", scope ? scope : "");
	return 1;
}

/* Kineto's category for ops (user scopes are drawn as "user_annotation" by the hook). */
static const struct export_style op_style = {
	.cat = "cpu_op",
	.ph = 'X',
	.track = "torch ops",
	.desc = "PyTorch ops, backward ops and user scopes (RecordFunction), nested by time",
};

/* A step, as torch.profiler's ProfilerStep#N: a user annotation on the loop's thread. */
static const struct export_style step_style = {
	.cat = "user_annotation",
	.ph = 'X',
	.track = "torch steps",
	.desc = "Training steps: from the end of one optimizer step to the end of the next",
};

#define OFF(t, f) offsetof(struct t, f)

/* fwd_tid and torch_tid are torch's own thread ids, not the system's: merge leaves them. */
const struct rec_decoder torch_decoders[] = {
	{ BS_REC_TORCH_OP, sizeof(struct bs_torch_op), "torch_op", decode_op, &op_style,
	  .string_offs = { OFF(bs_torch_op, name_id), OFF(bs_torch_op, shapes_id),
			   OFF(bs_torch_op, concrete_id) },
	  .span = 1 },
	{ BS_REC_TORCH_STEP, sizeof(struct bs_torch_step), "torch_step", decode_step, &step_style,
	  .string_offs = { OFF(bs_torch_step, name_id) }, .span = 1 },
	{ 0 },
};
