// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cpu's part of the ledger (ledger.h): each sample, what split a thread's time on a CPU. */
#include "cpu.h"
#include "cpu_records.h"
#include "ledger.h"

static void cpu_ledger_feed(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_cpu_sample *s = (const void *)rec;

	if (rec->type != BS_REC_CPU_SAMPLE || rec->size < sizeof(*s))
		return;
	ledger__sample(l, rec->pid, rec->tid, rec->cpu, rec->ts, !!(s->flags & BS_CPU_KERNEL),
		       !!(s->flags & BS_CPU_FAULT), BS_CPU_SYSCALL_NR(s->flags),
		       s->stack_id ? trace_model__stack(m, s->stack_id) : NULL);
}

const struct family_ledger cpu_ledger = {
	.feed = cpu_ledger_feed,
};
