// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* proc's part of the ledger (ledger.h): when threads began and ended inside the recording. */
#include "ledger.h"
#include "proc.h"

static void proc_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	const struct bs_fork *f = (const void *)rec;

	if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f))
		ledger__life(l, f->child_pid, f->child_tid, rec->ts, 0);
	else if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit))
		ledger__life(l, rec->pid, rec->tid, 0, rec->ts);
}

const struct family_ledger proc_ledger = {
	.feed = proc_ledger_feed,
};
