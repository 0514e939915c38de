// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cuda's part of the ledger (ledger.h): its calls, a synchronization the GPU's wait. */
#include "cuda.h"
#include "ledger.h"

static enum ledger_kind cuda_ledger_kind(const struct ucall_api *a)
{
	return a->group == CUDA_GRP_SYNC ? LEDGER_GPU_SYNC : LEDGER_API;
}

static void cuda_ledger_feed(struct ledger *l, const struct bs_hdr *rec,
			     const struct trace_model *m)
{
	ledger__api_call(l, rec, m, &cuda_table, cuda_ledger_kind);
}

const struct family_ledger cuda_ledger = {
	.feed = cuda_ledger_feed,
	.api_kind = cuda_ledger_kind,
};
