// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda_callsites: the Python lines that made CUDA and NCCL calls, from the calls that carry a
 * stack (--stacks=cuda, --stacks=nccl): per (API, innermost Python line of the call's stack,
 * or the native function that made it when it has none), the calls and their time.
 */
#include "cuda.h"
#include "family.h"
#include "frame_sum.h"
#include "trace_model.h"
#include "nccl_records.h"

static void callsites__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	const struct trace_stack *s;
	struct event ev;

	if ((rec->type != BS_REC_CUDA_CALL && rec->type != BS_REC_NCCL_CALL) || u->depth)
		return;
	s = trace_model__event_stack(m, rec);
	if (s && family__decode(rec, m, &ev) == 1 && ev.name)
		frame_sum__add(st, ev.name, s, m, u->dur);
}

static int callsites__emit(void *st, const struct trace_model *m, struct table *t)
{
	return frame_sum__emit(st, m, t, "api", "API");
}

const struct report cuda_callsites = {
	.name = "cuda_callsites",
	.desc = "CUDA and NCCL Call Sites (calls with --stacks)",
	.new = frame_sum__new,
	.add = callsites__add,
	.emit = callsites__emit,
	.free = frame_sum__delete,
};
