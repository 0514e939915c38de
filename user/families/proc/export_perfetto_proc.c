// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proc family in the Perfetto export: its instants go on their threads' tracks and the loss
 * markers on a root track (their style); each loss record also feeds the "events lost"
 * counter, cumulative over every cause.
 */
#include <errno.h>
#include <stdlib.h>
#include "export_perfetto.h"
#include "proc.h"

struct pf_proc_loss {
	__u64 uuid; /* the counter's track, 0 until the first loss */
	__u64 total;
};

static int proc_open(struct pf *pf, void **st)
{
	*st = calloc(1, sizeof(struct pf_proc_loss));
	return *st ? 0 : -ENOMEM;
}

static int proc_observe(struct pf *pf, void *st, const struct bs_hdr *rec)
{
	const struct bs_loss *l = (const void *)rec;
	struct pf_proc_loss *p = st;
	int err;

	if (rec->type != BS_REC_LOSS || rec->size < sizeof(*l))
		return 0;
	if (!p->uuid) {
		p->uuid = pf->next_uuid++;
		err = pf__describe_counter(pf, rec->ts, p->uuid, 0, "events lost",
					   "Events the recorder lost so far, every cause together "
					   "(bpfsight info shows them by cause).",
					   CD_UNIT_COUNT);
		/* Start the line at zero where recording started, so the first step shows. */
		if (!err && pf->start_mono && pf->start_mono < rec->ts)
			err = pf__counter(pf, pf->start_mono, p->uuid, 0, NULL);
		if (err)
			return err;
	}
	p->total += l->count;
	return pf__counter(pf, rec->ts, p->uuid, (__s64)p->total, NULL);
}

const struct perfetto_family proc_perfetto = {
	.open = proc_open,
	.free = free,
	.observe = proc_observe,
};
