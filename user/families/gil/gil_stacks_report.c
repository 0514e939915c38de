// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil_stacks (--stacks=gil): where in the code the GIL was held while others waited, and
 * where they waited. "holder" rows: the holders' innermost Python lines weighed by the
 * waiting they caused (gil_holder_ns: timer samples of the holder on its CPU, and the part of
 * each round of a wait no sample covered, at the line the holder was at when it began);
 * "waiter" rows: the waiting thread's innermost Python line, with its waits' time (the site
 * that asked for the GIL back: after I/O, a sleep, a C call that released it).
 */
#include "frame_sum.h"
#include "gil.h"
#include "trace_model.h"

__u64 gil_holder_ns(const struct bs_hdr *rec)
{
	const struct bs_gil_holder *h = (const void *)rec;
	__u64 covered;

	if (rec->type == BS_REC_GIL_SAMPLE && rec->size >= sizeof(struct bs_gil_sample))
		return ((const struct bs_gil_sample *)rec)->dur;
	if (rec->type != BS_REC_GIL_HOLDER || rec->size < sizeof(*h))
		return 0;
	/* What the holders' samples do not stand for: the holder asleep with the GIL, there. */
	covered = (__u64)h->covered_us * 1000;
	return h->dur > covered ? h->dur - covered : 0;
}

static void gil_stacks__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	__u64 ns = gil_holder_ns(rec);

	if (ns)
		frame_sum__add(st, "holder", trace_model__event_stack(m, rec), m, ns);
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
	.desc = "GIL Waits by Code: the holders' lines by time and the waiters' (--stacks=gil)",
	.new = frame_sum__new,
	.add = gil_stacks__add,
	.emit = gil_stacks__emit,
	.free = frame_sum__delete,
};
