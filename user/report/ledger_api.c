// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A uprobe-API family's calls as the ledger's spans (ledger.h): ledger__api_call. */
#include "ledger.h"
#include "trace_model.h"
#include "ucall_api.h"

void ledger__api_call(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m,
		      const struct ucall_table *t,
		      enum ledger_kind (*kind)(const struct ucall_api *))
{
	const struct bs_ucall *c = (const void *)rec;
	const struct ucall_api *a;

	if (rec->type != t->rec_type || rec->size < sizeof(*c))
		return;
	/* the outermost call: an inner one (the driver's under the runtime's) is its time */
	if (BS_UCALL_DEPTH(c->depth) || c->dur < LEDGER_SPAN_MIN_NS ||
	    !(a = ucall_table__api(t, c->fn)))
		return;
	ledger__span(l, &(struct ledger_span){
				.pid = rec->pid,
				.tid = rec->tid,
				.ts = rec->ts,
				.dur = c->dur,
				.kind = kind ? kind(a) : LEDGER_API,
				.what = ucall_api__shown(a),
				.nr = -1,
				.stack = trace_model__event_stack(m, rec),
			});
}
