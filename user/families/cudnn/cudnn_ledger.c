// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cudnn's part of the ledger (ledger.h): its calls' time. */
#include "cudnn.h"
#include "ledger.h"

static enum ledger_kind cudnn_ledger_kind(const struct ucall_api *a)
{
	return LEDGER_API;
}

static void cudnn_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			      const struct trace_model *m)
{
	ledger__api_call(l, rec, m, &cudnn_table, cudnn_ledger_kind);
}

const struct family_ledger cudnn_ledger = {
	.feed = cudnn_ledger_feed,
	.api_kind = cudnn_ledger_kind,
};
