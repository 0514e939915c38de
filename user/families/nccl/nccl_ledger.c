// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* nccl's part of the ledger (ledger.h): its calls, each a collective's time. */
#include "ledger.h"
#include "nccl.h"

static enum ledger_kind nccl_ledger_kind(const struct ucall_api *a)
{
	return LEDGER_COLLECTIVE;
}

static void nccl_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	ledger__api_call(l, rec, m, &nccl_table, nccl_ledger_kind);
}

const struct family_ledger nccl_ledger = {
	.feed = nccl_ledger_feed,
	.api_kind = nccl_ledger_kind,
};
