// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil_stacks (--stacks=gil): where in the code the GIL was held while others waited, and
 * where they waited. "holder" rows: the holder's innermost Python line at the start of each
 * round of a wait (bs_gil_holder), with the round's time; "waiter" rows: the waiting
 * thread's innermost Python line, with its waits' time (the site that asked for the GIL
 * back: after I/O, a sleep, a C call that released it).
 */
#include "frame_sum.h"
#include "gil.h"
#include "trace_model.h"

static void gil_stacks__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	if (rec->type == BS_REC_GIL_HOLDER)
		frame_sum__add(st, "holder", trace_model__event_stack(m, rec), m,
			       ((const struct bs_gil_holder *)rec)->dur);
	else if (rec->type == BS_REC_GIL_WAIT)
		frame_sum__add(st, "waiter", trace_model__event_stack(m, rec), m,
			       ((const struct bs_gil_wait *)rec)->dur);
}

static int gil_stacks__emit(void *st, const struct trace_model *m, struct table *t)
{
	return frame_sum__emit(st, m, t, "role", "Role");
}

const struct report gil_stacks = {
	.name = "gil_stacks",
	.desc = "GIL Waits by Code: the holders' lines and the waiters' (--stacks=gil)",
	.new = frame_sum__new,
	.add = gil_stacks__add,
	.emit = gil_stacks__emit,
	.free = frame_sum__delete,
};
