// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* gil's part of the ledger (ledger.h): each wait for the GIL, with its holder. */
#include "gil.h"
#include "gil_records.h"
#include "ledger.h"

static void gil_ledger_feed(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_gil_wait *w = (const void *)rec;

	if (rec->type != BS_REC_GIL_WAIT || rec->size < sizeof(*w) || w->dur < LEDGER_SPAN_MIN_NS)
		return;
	ledger__span(l, &(struct ledger_span){
				.pid = rec->pid,
				.tid = rec->tid,
				.ts = rec->ts,
				.dur = w->dur,
				.kind = LEDGER_GIL,
				.what = "the GIL",
				.nr = -1,
				.other = w->holder_tid,
				.stack = trace_model__event_stack(m, rec),
			});
}

const struct family_ledger gil_ledger = {
	.feed = gil_ledger_feed,
};
