// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt's part of the ledger (ledger.h): each system call with a record as a span, its number
 * saying what kind of wait it is (a sleep, a poll, a child's wait). Blocked mode's records are
 * the sleeps alone; their time on a CPU the CPU samples in kernel code find.
 */
#include "ledger.h"
#include "osrt.h"
#include "osrt_records.h"

static void osrt_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	const struct bs_syscall *s = (const void *)rec;

	if (rec->type != BS_REC_SYSCALL || rec->size < sizeof(*s) ||
	    s->nr == BS_NR_URETPROBE_X86_64 || /* our own probes' */
	    s->dur < LEDGER_SPAN_MIN_NS)
		return;
	ledger__span(l, &(struct ledger_span){
				.pid = rec->pid,
				.tid = rec->tid,
				.ts = rec->ts,
				.dur = s->dur,
				.kind = ledger__kind_of_syscall((int)s->nr),
				.nr = (int)s->nr,
				.stack = trace_model__event_stack(m, rec),
			});
}

const struct family_ledger osrt_ledger = {
	.feed = osrt_ledger_feed,
};
