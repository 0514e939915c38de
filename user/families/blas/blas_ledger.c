// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* blas's part of the ledger (ledger.h): its calls' time. */
#include "blas.h"
#include "ledger.h"

static enum ledger_kind blas_ledger_kind(const struct ucall_api *a)
{
	return LEDGER_API;
}

static void blas_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	ledger__api_call(l, rec, m, &blas_table, blas_ledger_kind);
}

const struct family_ledger blas_ledger = {
	.feed = blas_ledger_feed,
	.api_kind = blas_ledger_kind,
};
