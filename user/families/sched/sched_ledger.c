// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sched's part of the ledger (ledger.h): every off-CPU interval, the timeline it is made of. */
#include "ledger.h"
#include "sched.h"
#include "sched_records.h"

static void sched_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			      const struct trace_model *m)
{
	const struct bs_offcpu *o = (const void *)rec;
	const struct bs_clock_skew *s = (const void *)rec;
	__u64 out;

	if (rec->type == BS_REC_CLOCK_SKEW && rec->size >= sizeof(*s)) {
		ledger__clock_skew(l, rec->pid, rec->tid, rec->ts, s->extra_ns);
		return;
	}
	if (rec->type != BS_REC_OFFCPU || rec->size < sizeof(*o) || (o->state & BS_SCHED_DEAD))
		return;
	/*
	 * From its real switch-out, not the recording's start the walk clipped it to: the ledger
	 * keeps to its window itself, and the check against the thread's own clock counts a wait
	 * for a CPU whole, from when the thread was queued, as the kernel does.
	 */
	out = trace_model__began(m, rec);
	/* a stack only on a block (taken when it returns to user space), and not a brief one */
	ledger__offcpu(l, rec->pid, rec->tid, rec->cpu, out, rec->ts + o->dur - out, o->runnable_ns,
		       o->state != 0, o->waker_tid,
		       o->state && o->dur >= LEDGER_STACK_MIN_NS ? trace_model__event_stack(m, rec)
								 : NULL);
}

const struct family_ledger sched_ledger = {
	.feed = sched_ledger_feed,
};
