// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family's columns in `bpfsight top`: per thread, the CUDA calls it made (depth 0,
 * as cuda_api_sum counts them) per second, and the share of the interval it spent inside them
 * (the part of each call inside the interval: a call is seen when it returns).
 */
#include "cuda.h"
#include "top_family.h"

enum { CALLS, TIME };

static const struct top_column cuda_columns[] = {
	[CALLS] = { "cuda", "CUDA/s", "CUDA API calls per second (cuda)", TOP_RATE, 0, 6 },
	[TIME] = { "cuda-time", "CUDA%", "time inside CUDA API calls (cuda)", TOP_SHARE, 0, 5 },
	{ 0 },
};

static void cuda_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	const struct bs_ucall *r = (const void *)h;

	/* depth > 0: a call the library made inside one the application made */
	if (h->type != BS_REC_CUDA_CALL || h->size < sizeof(*r) || r->depth)
		return;
	top__add(t, &family_cuda, CALLS, h->pid, h->tid, 1);
	top__add_span(t, &family_cuda, TIME, h->pid, h->tid, h->ts, r->dur);
}

const struct top_family cuda_top = {
	.columns = cuda_columns,
	.record = cuda_top_record,
};
