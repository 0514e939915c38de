// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* proc's part of the ledger (ledger.h): when threads began and ended inside the recording. */
#include "ledger.h"
#include "proc.h"

static void proc_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	const struct bs_fork *f = (const void *)rec;

	const struct bs_thread_snap_clock *c = (const void *)rec;

	if (rec->type == BS_REC_THREAD_SNAP && rec->size >= sizeof(*c) &&
	    (c->s.flags & BS_SNAP_EDGES))
		ledger__clock(l, rec->pid, rec->tid, rec->ts, c->s.cpu_ns, c->run_delay_ns,
			      !!(c->s.flags & BS_SNAP_AT_END),
			      !!(c->s.flags & BS_SNAP_CLOCK_STALE));
	else if (rec->type == BS_REC_THREAD_SNAP && rec->size >= sizeof(struct bs_thread_snap) &&
		 (c->s.flags & BS_SNAP_NOW) && !(c->s.flags & BS_SNAP_RUNNING) && c->s.off_cpu_ns &&
		 c->s.off_cpu_ns < rec->ts)
		/* a live view's read (top -p): a thread off its CPU now, its switch-in to come */
		ledger__offcpu_now(l, rec->pid, rec->tid, rec->cpu, rec->ts - c->s.off_cpu_ns,
				   c->s.off_cpu_ns, c->s.state != 0,
				   c->s.stack_id ? trace_model__stack(m, c->s.stack_id) : NULL);
	else if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f))
		ledger__life(l, f->child_pid, f->child_tid, rec->ts, 0);
	else if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit))
		ledger__life(l, rec->pid, rec->tid, 0, rec->ts);
}

const struct family_ledger proc_ledger = {
	.feed = proc_ledger_feed,
};
