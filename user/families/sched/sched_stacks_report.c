// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * offcpu_stacks (--stacks=sched): where in the code threads blocked, by the time they spent
 * off the CPU. A row per (process name, the blocked interval's innermost Python line, else
 * its first native frame): the intervals of at least the threshold that carry a stack, their
 * count and off-CPU time (blocked and then waiting for a CPU, as the interval's dur).
 */
#include "frame_sum.h"
#include "sched.h"
#include "trace_model.h"

static void offcpu_stacks__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	const char *proc;

	if (rec->type != BS_REC_OFFCPU)
		return;
	proc = trace_model__process_name(m, rec->pid);
	frame_sum__add(st, proc ? proc : "?", trace_model__event_stack(m, rec), m,
		       ((const struct bs_offcpu *)rec)->dur);
}

static int offcpu_stacks__emit(void *st, const struct trace_model *m, struct table *t)
{
	return frame_sum__emit(st, m, t, "process", "Process");
}

const struct report offcpu_stacks = {
	.name = "offcpu_stacks",
	.desc = "Off-CPU Time by Code: where threads blocked (--stacks=sched)",
	.new = frame_sum__new,
	.add = offcpu_stacks__add,
	.emit = offcpu_stacks__emit,
	.free = frame_sum__delete,
};
