// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cublas's part of the ledger (ledger.h): its calls' time. */
#include "cublas.h"
#include "ledger.h"

static enum ledger_kind cublas_ledger_kind(const struct ucall_api *a)
{
	return LEDGER_API;
}

static void cublas_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			       const struct trace_model *m)
{
	ledger__api_call(l, rec, m, &cublas_table, cublas_ledger_kind);
}

const struct family_ledger cublas_ledger = {
	.feed = cublas_ledger_feed,
	.api_kind = cublas_ledger_kind,
};
