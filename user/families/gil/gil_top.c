// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gil family's column in `bpfsight top`: each thread's share of the time spent waiting for
 * the GIL, from its cumulative GIL_AGG snapshots (every wait, short ones too), written at each
 * poll: hence a polled column (top_family.h).
 */
#include <errno.h>
#include "gil.h"
#include "metrics_family.h"
#include "top_family.h"
#include "hmap.h"

static const struct top_column gil_columns[] = {
	{ "gil", "GIL%", "time waiting for the GIL (gil, every second)", TOP_SHARE, TOP_POLLED, 5 },
	{ 0 },
};

static int gil_top_open(const struct record_opts *o, void **st)
{
	/* {pid << 32 | tid, 0} -> m_count: each thread's last totals */
	*st = hmap__new(sizeof(struct m_count));
	return *st ? 0 : -ENOMEM;
}

static void gil_top_free(void *st)
{
	hmap__free(st);
}

static void gil_top_record(struct top *t, void *st, const struct bs_hdr *h)
{
	struct hkey key = { (__u64)h->pid << 32 | h->tid, 0 };
	const struct bs_gil_agg *a = (const void *)h;
	struct m_count d;

	switch (h->type) {
	case BS_REC_GIL_AGG:
		if (h->size < sizeof(*a))
			return;
		d = m_count__delta(st, key, a->v.wait_count, a->v.wait_total_ns);
		top__add(t, &family_gil, 0, h->pid, h->tid, d.total_ns);
		break;
	case BS_REC_EXIT: /* its final totals came before: forget them */
		hmap__del(st, key);
		break;
	case BS_REC_GIL_PROC: /* a python whose GIL is measured: the column is shown from 0 */
		if (h->size >= sizeof(struct bs_gil_proc) &&
		    ((const struct bs_gil_proc *)h)->method != BS_GIL_METHOD_NONE)
			top__show(t, &family_gil, 0);
		break;
	}
}

const struct top_family gil_top = {
	.columns = gil_columns,
	.open = gil_top_open,
	.free = gil_top_free,
	.record = gil_top_record,
};
